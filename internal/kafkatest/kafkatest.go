// Package kafkatest starts Apache Kafka clusters for tests of the scale-out
// mode (issue 23): three nodes in KRaft mode, each broker and controller,
// run with java from the jars scripts/cluster fetches, with the settings of
// scripts/kafka/server.properties, on free ports of 127.0.0.1 and with
// their data in a scratch directory of their own. Tests kill and restart
// nodes to check what survives a crash. A test that cannot get a cluster
// fails with a line saying how to get one; it never skips.
//
// Each cluster is three JVMs of up to 384 MB of heap that take some 20 to
// 40 s to start on a machine of two cores: start one per test that needs
// it, not one per subtest, and run such tests one at a time.
package kafkatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/proc"
)

// MaxMessageBytes is the largest record batch the brokers and the topics
// CreateTopic makes take: 33 MiB, cluster.MaxBatchBytes (a record of
// cluster.MaxRecordBytes, 32 MiB, and its framing). A producer must raise its own limit to it to send one that large
// (kgo.ProducerBatchMaxBytes(kafkatest.MaxMessageBytes)).
const MaxMessageBytes = 33 << 20

// EnvJavaOpts names the environment variable whose JVM options (split at
// white space) replace defaultJavaOpts for the Kafka nodes the tests start.
const EnvJavaOpts = "TRAILS_TEST_KAFKA_JAVA_OPTS"

// defaultJavaOpts are the JVM options of a test node: a small heap, and,
// as for the test Fusekis (fusekitest), no optimizing compiler and the
// serial collector, which spare the CPU of a machine of two cores that
// starts three JVMs at once.
var defaultJavaOpts = []string{"-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// testSettings are appended to scripts/kafka/server.properties for the
// test nodes (the last value of a key wins): one partition, not 50, for
// each internal topic, which a test that uses consumer groups or
// transactions would otherwise wait for.
const testSettings = `
# internal/kafkatest: smaller internal topics.
offsets.topic.num.partitions=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.num.partitions=1
`

// howTo is the one line a test prints when it cannot get a cluster.
const howTo = "install Java 17+ and Maven (e.g. apt-get install openjdk-17-jre-headless maven) and run scripts/cluster fetch"

// Bounds on how long the steps may take. A loaded machine of two cores
// needs all of it: three JVMs take 20 to 40 s to start there.
const (
	formatTimeout = 2 * time.Minute
	startTimeout  = 3 * time.Minute
	topicTimeout  = time.Minute
	killTimeout   = 15 * time.Second
)

// Cluster is a running three-node Kafka cluster of one test, which stops it
// and removes its data when it ends (tb.Cleanup), or of a test binary
// (Launch, Close). Its nodes have the ids 1,
// 2 and 3. Its methods fail the test given to Start, so call them from the
// goroutine that runs that test; they are not safe for concurrent use.
type Cluster struct {
	// Started is how long Start took: from formatting the storage until
	// every node was up and saw the other two.
	Started time.Duration

	tb        testing.TB
	dir       string // scratch directory: configs, logs, data
	classpath string
	log4j     string // the log4j 2 configuration (scripts/kafka/log4j2.properties)
	nodes     []*node
	probe     *kgo.Client // seeded with every node, in order: asks one directly
}

// node is one Kafka process of a Cluster.
type node struct {
	id     int
	port   int // PLAINTEXT, for clients and the other brokers
	cport  int // CONTROLLER, for the quorum
	config string
	log    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// Start starts a new cluster of three nodes for tb and waits until every
// node is up and sees the other two. It fails tb when java is missing or
// the jars cannot be fetched (scripts/cluster fetch needs Maven), saying
// how to get them, and when the cluster does not come up, showing the end
// of the nodes' logs.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := start(tb)
	if err != nil {
		tb.Fatalf("kafkatest: no Kafka cluster for the test: %v", err)
	}
	return c
}

// Launch is Start for a cluster that outlives one test, such as the one a
// test binary shares among its tests (internal/clustertest starts it
// from the first test that needs it): it returns an error, saying how to
// get Java and the jars, instead of failing a test, and the caller stops
// the cluster with Close. Kill and Restart need a cluster from Start.
func Launch() (*Cluster, error) {
	c, err := start(nil)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: no Kafka cluster for the tests: %w", err)
	}
	return c, nil
}

// Close stops a cluster from Launch and removes its data (as a test's end
// does for one from Start).
func (c *Cluster) Close() { c.close() }

// start starts a cluster, trying again on other ports when a free port
// was taken between the probe and the JVM. A nil tb (Launch) leaves
// stopping it to the caller.
func start(tb testing.TB) (*Cluster, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, errors.New("java is not installed\nTo get one: " + howTo)
	}
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return nil, err
	}
	cp, err := classpath(root)
	if err != nil {
		return nil, fmt.Errorf("%w\nTo get one: %s", err, howTo)
	}
	template, err := os.ReadFile(filepath.Join(root, "scripts", "kafka", "server.properties"))
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		c := &Cluster{tb: tb, classpath: cp, log4j: filepath.Join(root, "scripts", "kafka", "log4j2.properties")}
		err := c.start(string(template))
		if err == nil {
			if tb != nil {
				tb.Cleanup(c.close)
			}
			return c, nil
		}
		taken := c.portTaken()
		c.close()
		if !taken || try == 3 {
			return nil, err
		}
	}
}

// start lays out the cluster's scratch directory, formats the nodes'
// storage and starts them.
func (c *Cluster) start(template string) error {
	t0 := time.Now()
	dir, err := os.MkdirTemp(fusekitest.ScratchDir(), "trails-kafka-") // .ci/run kills what runs under trails-*
	if err != nil {
		return err
	}
	c.dir = dir
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	var voters []string
	for i := range 3 {
		n := &node{id: i + 1, port: ports[i], cport: ports[3+i]}
		n.config = filepath.Join(dir, fmt.Sprintf("node%d.properties", n.id))
		n.log = filepath.Join(dir, fmt.Sprintf("node%d.log", n.id))
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.cport))
	}
	for _, n := range c.nodes {
		conf, err := render(template, map[string]string{
			"NODE_ID":         strconv.Itoa(n.id),
			"VOTERS":          strings.Join(voters, ","),
			"BROKER_PORT":     strconv.Itoa(n.port),
			"CONTROLLER_PORT": strconv.Itoa(n.cport),
			"LOG_DIR":         filepath.Join(dir, fmt.Sprintf("data%d", n.id)),
		})
		if err != nil {
			return err
		}
		if err := os.WriteFile(n.config, []byte(conf+testSettings), 0o644); err != nil {
			return err
		}
	}
	if err := c.format(); err != nil {
		return err
	}
	c.probe, err = kgo.NewClient(kgo.SeedBrokers(c.Brokers()...), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.launch(n); err != nil {
			return err
		}
	}
	if err := c.waitUp(startTimeout); err != nil {
		return err
	}
	c.Started = time.Since(t0)
	return nil
}

// field matches a field of the server.properties template, @NAME@.
var field = regexp.MustCompile(`@[A-Z_]+@`)

// render fills the @NAME@ fields of the server.properties template.
func render(template string, fields map[string]string) (string, error) {
	for k, v := range fields {
		template = strings.ReplaceAll(template, "@"+k+"@", v)
	}
	if f := field.FindString(template); f != "" {
		return "", fmt.Errorf("scripts/kafka/server.properties has a field kafkatest does not fill in: %s", f)
	}
	return template, nil
}

// format formats the three nodes' storage at once, with one new cluster
// id. The voters are static (controller.quorum.voters), so the format takes
// neither --standalone nor --initial-controllers: either would make a
// dynamic quorum, --standalone one of a single voter.
func (c *Cluster) format() error {
	id, err := clusterID()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), formatTimeout)
	defer cancel()
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			args := append(c.toolOpts(), "kafka.tools.StorageTool", "format", "-t", id, "-c", n.config)
			out, err := exec.CommandContext(ctx, "java", args...).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("format node %d's storage: %v: %s", n.id, err, bytes.TrimSpace(out))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clusterID returns a new cluster id as StorageTool random-uuid makes them
// (Kafka's Uuid: 16 random bytes in unpadded URL-safe base64, never
// starting with "-"), without the second or two a JVM takes to start.
func clusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

// toolOpts are the JVM options and classpath of a Kafka command-line tool:
// a quick start, warnings only.
func (c *Cluster) toolOpts() []string {
	return []string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-Dlog4j2.configurationFile=" + c.log4j, "-Dtrails.kafka.loglevel=WARN", "-cp", c.classpath}
}

// launch starts node n's JVM without waiting for it, its output appended to
// its log. The process is killed if the test binary dies.
func (c *Cluster) launch(n *node) error {
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== kafkatest: starting node %d at %s\n", n.id, time.Now().Format(time.RFC3339Nano))
	opts := slices.Clone(defaultJavaOpts)
	if v, ok := os.LookupEnv(EnvJavaOpts); ok {
		opts = strings.Fields(v)
	}
	args := append(opts, "-Dlog4j2.configurationFile="+c.log4j, "-Dtrails.kafka.loglevel=INFO",
		"-cp", c.classpath, "kafka.Kafka", n.config)
	cmd := exec.Command("java", args...)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := fusekitest.Spawn(cmd); err != nil { // Pdeathsig from a thread that outlives the test
		return fmt.Errorf("start node %d: %w", n.id, err)
	}
	n.cmd = cmd
	n.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(cmd, n.exited)
	return nil
}

// running reports whether node n's process runs.
func (n *node) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// waitUp waits until every running node answers and lists every running
// node among the brokers of its metadata: in KRaft a broker lists only the
// brokers registered with the controllers and not fenced.
func (c *Cluster) waitUp(timeout time.Duration) error {
	var up []int32
	for _, n := range c.nodes {
		if n.running() {
			up = append(up, int32(n.id))
		}
	}
	return c.wait(timeout, func(ctx context.Context, n *node) error {
		resp, err := c.metadata(ctx, n)
		if err != nil {
			return err
		}
		var seen []int32
		for _, b := range resp.Brokers {
			seen = append(seen, b.NodeID)
		}
		for _, id := range up {
			if !slices.Contains(seen, id) {
				return fmt.Errorf("node %d lists brokers %v, not yet %d", n.id, seen, id)
			}
		}
		return nil
	})
}

// wait calls ready for every running node until it returns nil for all
// of them, for up to timeout. It fails early, with the end of the node's
// log, when a node's process exits; on timeout it returns the last
// answer and the end of every running node's log.
func (c *Cluster) wait(timeout time.Duration, ready func(context.Context, *node) error) error {
	deadline := time.Now().Add(timeout)
	var running []*node
	for _, n := range c.nodes {
		if n.running() {
			running = append(running, n)
		}
	}
	for {
		var last error
		for _, n := range running {
			if !n.running() {
				return fmt.Errorf("node %d exited\n--- %s (tail) ---\n%s", n.id, n.log, proc.Tail(n.log, 30))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err := ready(ctx, n)
			cancel()
			if err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "not ready within %v: %v", timeout, last)
			for _, n := range running {
				fmt.Fprintf(&b, "\n--- %s (tail) ---\n%s", n.log, proc.Tail(n.log, 15))
			}
			return errors.New(b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metadata asks node n itself for its metadata: the brokers, and the
// topics named (none when no topic is).
func (c *Cluster) metadata(ctx context.Context, n *node, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.probe.SeedBrokers()[n.id-1].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", n.id, err)
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Brokers returns the bootstrap addresses of the nodes, host:port, in the
// order of their ids: Brokers()[id-1] is node id's.
func (c *Cluster) Brokers() []string {
	var bs []string
	for _, n := range c.nodes {
		bs = append(bs, "127.0.0.1:"+strconv.Itoa(n.port))
	}
	return bs
}

// node returns the node of id, failing the test when there is none.
func (c *Cluster) node(id int) *node {
	c.tb.Helper()
	if id < 1 || id > len(c.nodes) {
		c.tb.Fatalf("kafkatest: no node %d: the nodes are 1, 2 and 3", id)
	}
	return c.nodes[id-1]
}

// Kill kills node id (1, 2 or 3) at once with SIGKILL, as a crash would,
// and waits until its process is gone. Its data stays for Restart. It
// fails the test when the node is not running.
func (c *Cluster) Kill(id int) {
	c.tb.Helper()
	n := c.node(id)
	if !n.running() {
		c.tb.Fatalf("kafkatest: Kill(%d): node %d is not running", id, id)
	}
	n.cmd.Process.Kill()
	select {
	case <-n.exited:
	case <-time.After(killTimeout):
		c.tb.Fatalf("kafkatest: node %d still running %v after SIGKILL", id, killTimeout)
	}
}

// Restart starts node id (1, 2 or 3) again after Kill, on the same ports
// and with its data as the kill left it, and waits until it is back: it
// answers, and every running node lists it among the brokers (it is
// registered and unfenced). It does not wait for its replicas to catch up.
// It fails the test when the node is running or does not come back within
// three minutes.
func (c *Cluster) Restart(id int) {
	c.tb.Helper()
	n := c.node(id)
	if n.running() {
		c.tb.Fatalf("kafkatest: Restart(%d): node %d is running; Kill it first", id, id)
	}
	if err := c.launch(n); err != nil {
		c.tb.Fatalf("kafkatest: %v", err)
	}
	if err := c.waitUp(startTimeout); err != nil {
		c.tb.Fatalf("kafkatest: node %d did not come back: %v", id, err)
	}
}

// CreateTopic creates topic name with the given number of partitions,
// replication factor 3, min.insync.replicas 2 and max.message.bytes
// MaxMessageBytes, and waits until every running node knows each of its
// partitions' leader. It fails tb when the topic exists already or cannot
// be created.
func (c *Cluster) CreateTopic(tb testing.TB, name string, partitions int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	adm := kadm.NewClient(c.probe)
	_, err := adm.CreateTopic(ctx, int32(partitions), 3, map[string]*string{
		"min.insync.replicas": kadm.StringPtr("2"),
		"max.message.bytes":   kadm.StringPtr(strconv.Itoa(MaxMessageBytes)),
	}, name)
	if err != nil {
		tb.Fatalf("kafkatest: create topic %s: %v", name, err)
	}
	err = c.wait(topicTimeout, func(ctx context.Context, n *node) error {
		resp, err := c.metadata(ctx, n, name)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("node %d: %d topics in the answer, want 1", n.id, len(resp.Topics))
		}
		t := resp.Topics[0]
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("node %d: topic %s: %w", n.id, name, err)
		}
		if len(t.Partitions) != partitions {
			return fmt.Errorf("node %d: topic %s has %d partitions, want %d", n.id, name, len(t.Partitions), partitions)
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
				return fmt.Errorf("node %d: topic %s partition %d has no leader yet (%v)", n.id, name, p.Partition, err)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("kafkatest: topic %s: %v", name, err)
	}
}

// Leader returns the id of the node that leads partition of topic, as the
// running nodes see it, waiting up to a minute for one to be elected. It
// fails tb when none is.
func (c *Cluster) Leader(tb testing.TB, topic string, partition int32) int {
	tb.Helper()
	var leader int32
	err := c.wait(topicTimeout, func(ctx context.Context, n *node) error {
		resp, err := c.metadata(ctx, n, topic)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.Partition != partition {
					continue
				}
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 1 || int(p.Leader) > len(c.nodes) || !c.nodes[p.Leader-1].running() {
					return fmt.Errorf("node %d: %s/%d has no running leader (%d, %v)", n.id, topic, partition, p.Leader, err)
				}
				leader = p.Leader
				return nil
			}
		}
		return fmt.Errorf("node %d does not know %s/%d", n.id, topic, partition)
	})
	if err != nil {
		tb.Fatalf("kafkatest: leader of %s/%d: %v", topic, partition, err)
	}
	return int(leader)
}

// close kills every node (the data goes with the cluster, so there is
// nothing to shut down cleanly), shows the end of their logs when the test
// failed, and removes the scratch directory unless $TRAILS_TEST_KEEP_LOGS
// is set (fusekitest.EnvKeepLogs).
func (c *Cluster) close() {
	for _, n := range c.nodes {
		if n.running() {
			n.cmd.Process.Kill()
			<-n.exited
		}
	}
	if c.probe != nil {
		c.probe.Close()
	}
	if c.tb != nil && c.tb.Failed() {
		for _, n := range c.nodes {
			c.tb.Logf("kafkatest: --- %s (tail) ---\n%s", n.log, proc.Tail(n.log, 20))
		}
	}
	if c.dir == "" || os.Getenv(fusekitest.EnvKeepLogs) != "" {
		return
	}
	if err := os.RemoveAll(c.dir); err != nil && c.tb != nil {
		c.tb.Errorf("kafkatest: remove %s: %v", c.dir, err)
	}
}

// portTaken reports whether a node failed because its port was taken.
func (c *Cluster) portTaken() bool {
	for _, n := range c.nodes {
		if b, err := os.ReadFile(n.log); err == nil && bytes.Contains(b, []byte("ddress already in use")) {
			return true
		}
	}
	return false
}

// classpath asks scripts/cluster for Kafka's classpath, fetching the jars
// with Maven if needed.
func classpath(root string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "cluster"), "classpath")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/cluster classpath: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	cp := strings.TrimSpace(lines[len(lines)-1])
	if !strings.Contains(cp, "kafka_2.13-") {
		return "", fmt.Errorf("scripts/cluster classpath printed no Kafka jar: %q", cp)
	}
	return cp, nil
}

// freePorts returns n distinct ports free on 127.0.0.1 a moment ago,
// holding them all open at once so that none is picked twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
