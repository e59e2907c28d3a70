package main

import (
	"time"

	"github.com/trails-kg/trails/session"
)

// plan holds the sizes of a run: the for the full run, tiny ones
// for -short (which checks that the code works, not how fast).
type plan struct {
	name string
	runs int // measured runs after one warm-up

	forkParents []int // parent sizes of the fork scenario

	histories []int         // effective history lengths of the load scenario
	depths    []int         // chain depths of the load scenario
	rtt       time.Duration // latency added per round trip in "over a network"

	persist       []persistPlan // batch sizes and how many turns each appends
	persistBudget time.Duration // a Persist run stops after this long

	scaleTurns, scaleDepth int           // the fork the scaling scenario loads
	scaleRuns              int           // its measured loads with each store size
	scaleGap               time.Duration // the pause between them
	fillerSmall, fillerBig int           // other turns in the store, before and after
	fillerPerSession       int           // turns per filler session
	fillerChars            [2]int        // characters per filler turn, from and to
	fillerBatchBytes       int           // N-Quads bytes per bulk request

	allocTurns int // history whose loads the allocation count divides
	rssTurns   int // the session the child process loads

	readers []int         // concurrent readers
	window  time.Duration // how long each concurrency run lasts

	warmLoads int           // loads that warm the JVM up, at least
	warmMax   time.Duration // how long warming up may go on past warmLoads

	wideForks       int // forks of the wide tree's parent
	wideParentTurns int // the parent's turns
	wideForkTurns   int // each fork's own turns
	wideOtherRoots  int // small roots stored beside it, for the root listing

	tailTurns int // the long root whose tail is loaded
	tailLast  int // the tail's turns, and the short root's

	loopsPerRun   int // agent loops (four structured turns) per run of each way
	bigTurnBytes  int // content of the big turn
	stateTurns    int // history of the load with state
	stateDepth    int // its chain's depth
	appendsPerRun int // single-turn appends per run of each way

	clusterWriters  int           // concurrent writers of the cluster's throughput
	clusterWindow   time.Duration // how long each of its runs lasts
	catchUpTurns    int           // the log a new replica applies holds at least these turns
	failoverRuns    int           // kills of each kind
	failoverWriters int           // writers appending while a process is killed

	signTurns   int // each Store's session before its single-turn appends
	signAppends int // single-turn appends per run through each Store
	signOps     int // witness.Sign and Dir.Add calls timed alone
	signLoops   int // agent loops per run through each signing Store

	shardWriters  int           // writers of the shards scenario, a tree each
	shardQuotaUs  int           // each group's cgroup quota per cgroupPeriodUs, capped (-shard-cores)
	shardGroups   []int         // the numbers of replica groups measured capped
	shardUncapped []int         // those measured uncapped too
	shardWarm     time.Duration // appends before each configuration's windows
	shardJIT      int           // appends each group applies uncapped before a cluster is measured (its JVM compiles)
	shardWindow   time.Duration // one timed window
	shardWindows  int           // windows per configuration; its rate is their median
}

// persistPlan is one batch size of the persist scenario.
type persistPlan struct {
	batch int // turns per Persist
	turns int // turns appended by each way, over all runs
}

func fullPlan() plan {
	return plan{
		name:        "full",
		runs:        5,
		forkParents: []int{100, 1000, 5000},
		histories:   []int{1000, 5000},
		depths:      []int{1, 4, 8, 16, 32},
		rtt:         5 * time.Millisecond,
		// Every write is a TDB2 commit, which waits for the disk: 10,000
		// turns in batches of 1 would take far longer than the whole run
		// may. Each run stops after persistBudget; the report says how
		// many turns each batch size appended.
		persist:          []persistPlan{{1, 10000}, {10, 10000}, {100, 10000}},
		persistBudget:    2 * time.Second,
		scaleTurns:       1000,
		scaleDepth:       8,
		scaleRuns:        15,
		scaleGap:         200 * time.Millisecond,
		fillerSmall:      10000,
		fillerBig:        1000000,
		fillerPerSession: 100,
		// Fuseki's load rate falls with the text it parses: a million
		// turns of 1,200 characters take 4 to 8 minutes on a busy 2-core
		// machine. The filler takes the short end of the range; the
		// store's size in turns and quads is the same.
		fillerChars:      [2]int{200, 400},
		fillerBatchBytes: 64 << 20,
		allocTurns:       5000,
		rssTurns:         100000,
		readers:          []int{1, 4, 16},
		window:           time.Second,
		warmLoads:        10,
		warmMax:          60 * time.Second,
		wideForks:        10000,
		wideParentTurns:  20,
		wideForkTurns:    2,
		wideOtherRoots:   30,
		tailTurns:        100000,
		tailLast:         50,
		loopsPerRun:      20,
		bigTurnBytes:     session.MaxTurnBytes - 4096, // what a turn's other triples leave of 16 MiB
		stateTurns:       1000,
		stateDepth:       32,
		appendsPerRun:    60,
		clusterWriters:   64,
		clusterWindow:    5 * time.Second,
		catchUpTurns:     20000,
		failoverRuns:     3,
		failoverWriters:  4,
		// 600 appends through each Store, the first 100 a warm-up:
		// percentiles over 500.
		signTurns:   200,
		signAppends: 100,
		signOps:     500,
		signLoops:   60,
		// Three clusters (1, 2, 4 groups), five configurations: some
		// 7 minutes with the starts and the checks.
		shardWriters:  64,
		shardQuotaUs:  defaultGroupQuotaUs,
		shardGroups:   []int{1, 2, 4},
		shardUncapped: []int{1, 2},
		shardWarm:     10 * time.Second,
		shardJIT:      4000,
		shardWindow:   10 * time.Second,
		shardWindows:  3,
	}
}

func shortPlan() plan {
	return plan{
		name:             "short",
		runs:             1,
		forkParents:      []int{10, 50},
		histories:        []int{33},
		depths:           []int{1, 32},
		rtt:              5 * time.Millisecond,
		persist:          []persistPlan{{1, 4}, {10, 20}, {100, 100}},
		persistBudget:    time.Second,
		scaleTurns:       45,
		scaleDepth:       8,
		scaleRuns:        1,
		fillerSmall:      100,
		fillerBig:        2000,
		fillerPerSession: 100,
		fillerChars:      [2]int{200, 400},
		fillerBatchBytes: 1 << 20,
		allocTurns:       33,
		rssTurns:         300,
		readers:          []int{1, 4, 16},
		window:           200 * time.Millisecond,
		warmLoads:        1,
		warmMax:          time.Second,
		wideForks:        20,
		wideParentTurns:  5,
		wideForkTurns:    2,
		wideOtherRoots:   3,
		tailTurns:        300,
		tailLast:         50,
		loopsPerRun:      2,
		bigTurnBytes:     1 << 20,
		stateTurns:       66,
		stateDepth:       32,
		appendsPerRun:    4,
		clusterWriters:   64,
		clusterWindow:    time.Second,
		catchUpTurns:     200,
		failoverRuns:     1,
		failoverWriters:  4,
		signTurns:        10,
		signAppends:      4,
		signOps:          10,
		signLoops:        2,
		shardWriters:     64,
		shardQuotaUs:     defaultGroupQuotaUs,
		shardGroups:      []int{1, 2},
		shardUncapped:    []int{1, 2},
		shardWarm:        time.Second,
		shardJIT:         10,
		shardWindow:      time.Second,
		shardWindows:     1,
	}
}
