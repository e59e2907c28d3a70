package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
)

type moveCmd struct {
	to    int
	purge bool
	json  bool
}

func (*moveCmd) name() string  { return "move-tree" }
func (*moveCmd) usage() string { return "ROOT --to GROUP [--json] | --purge [--json]" }
func (*moveCmd) synopsis() string {
	return "move a session tree to another replica group of a sharded cluster, losing no write"
}
func (*moveCmd) example() string {
	return "trails-admin --store kafka move-tree 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --to 1"
}
func (c *moveCmd) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.to, "to", -1, "the replica group (0, 1, ...) the tree moves to")
	fs.BoolVar(&c.purge, "purge", false, "instead, remove the copies that ended moves left in their old groups (once the readers' timeout has passed since)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// moveJSON is the JSON form of a move (stable names).
type moveJSON struct {
	Root     string   `json:"root"`
	From     int      `json:"from"`
	To       int      `json:"to"`
	Sessions []string `json:"sessions"`
	Deleted  []string `json:"deleted"`
	Quads    int      `json:"quads"`
	Bytes    int      `json:"bytes"`
	Resumed  bool     `json:"resumed"`
}

func (c *moveCmd) run(ctx context.Context, a *app, args []string) error {
	if c.purge {
		return c.runPurge(ctx, a, args)
	}
	if len(args) != 1 {
		return usageErrorf("move-tree needs the id of a tree's root session; try: trails-admin move-tree -h")
	}
	if c.to < 0 {
		return usageErrorf("move-tree: --to GROUP: want the replica group the tree moves to (0, 1, ...); try: trails-admin move-tree -h")
	}
	sh, err := shardedStore(ctx, a)
	if err != nil {
		return err
	}
	if c.to >= sh.Groups() {
		return usageErrorf("move-tree: --to %d: the cluster has groups 0 to %d", c.to, sh.Groups()-1)
	}
	p := a.progress("move-tree")
	p.update(0, 1, args[0])
	rep, err := cluster.MoveTree(ctx, sh, args[0], c.to, func(format string, args ...any) {
		fmt.Fprintf(a.stderr, "move-tree: "+format+"\n", args...)
	})
	p.finish()
	if err != nil {
		return err
	}
	ids, deleted := idsOf(rep.Sessions), idsOf(rep.Deleted)
	if c.json {
		return a.json(moveJSON{Root: rep.Root, From: rep.From, To: rep.To, Sessions: ids, Deleted: deleted, Quads: rep.Quads, Bytes: rep.Bytes, Resumed: rep.Resumed})
	}
	if len(ids) == 0 {
		fmt.Fprintf(a.stdout, "the tree of %s is in group %d: nothing left to move\n", termsafe.String(rep.Root), rep.To)
		return nil
	}
	fmt.Fprintf(a.stdout, "moved the tree of %s from group %d to group %d: %d sessions and the records of %d deleted ones, %d quads copied (%d bytes)\n",
		termsafe.String(rep.Root), rep.From, rep.To, len(ids), len(deleted), rep.Quads, rep.Bytes)
	return nil
}

// idsOf returns the session ids of session IRIs, never nil (JSON: []).
func idsOf(iris []string) []string {
	ids := make([]string, len(iris))
	for i, s := range iris {
		ids[i] = strings.TrimPrefix(s, ontology.SessionBase)
	}
	return ids
}

// shardedStore returns the store when it is a cluster of several replica
// groups, else a usage error.
func shardedStore(ctx context.Context, a *app) (*cluster.Sharded, error) {
	client, err := a.kg(ctx)
	if err != nil {
		return nil, err
	}
	sh, ok := client.(*cluster.Sharded)
	if !ok || sh.Groups() < 2 {
		return nil, usageErrorf("move-tree: the store is not a cluster of several replica groups (--store kafka with $%s, as scripts/cluster start --groups N prints it)", cluster.EnvTopics)
	}
	return sh, nil
}

// runPurge removes the copies that ended moves left (cluster.PurgeMoved).
func (c *moveCmd) runPurge(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 || c.to >= 0 {
		return usageErrorf("move-tree --purge takes no root and no --to; try: trails-admin move-tree -h")
	}
	sh, err := shardedStore(ctx, a)
	if err != nil {
		return err
	}
	removed, err := cluster.PurgeMoved(ctx, sh)
	if err != nil {
		return err
	}
	if c.json {
		byGroup := map[string]int{}
		for g, n := range removed {
			byGroup[fmt.Sprint(g)] = n
		}
		return a.json(map[string]map[string]int{"removed": byGroup})
	}
	if len(removed) == 0 {
		fmt.Fprintln(a.stdout, "no copy left by a move: nothing to remove")
		return nil
	}
	for g := range sh.Groups() {
		if n := removed[g]; n > 0 {
			fmt.Fprintf(a.stdout, "group %d: removed the graphs of %d sessions that moved out\n", g, n)
		}
	}
	return nil
}
