package session

import (
	"context"
	"fmt"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// The fork's checks: what the store must hold before a fork is created
// (admitFork, with the tree limits and the inherited prefix), and that a
// stored fork is the caller's (sameFork).

// admitFork checks, for new fork s, what the store must hold before it
// creates the fork, as the state row of Persist (row: state.rq) says: the
// parent, with at least ForkedAt turns and base (the chain digest of the
// prefix s holds) at ForkedAt-1, a chain within the depth limit, the tree
// limits (checkFork), a parent of another principal only with
// AcrossPrincipals, and a free branch label. It returns the depth the
// fork will have, or again when Persist must read the state again: the
// label was taken (s has a new one now), or the parent's turns were given
// the hash chain (sameBase).
func (st *Store) admitFork(ctx context.Context, s *Session, row kg.Solution, base string) (depth int, again bool, err error) {
	if _, ok := row["pexists"]; !ok {
		return 0, false, &AncestorError{Session: s.ID, Missing: s.ParentID}
	}
	plen, err := st.parentLength(ctx, s.ParentID, row)
	if err != nil {
		return 0, false, err
	}
	if plen < s.ForkedAt {
		return 0, false, fmt.Errorf("%w: parent %s has %d turns stored, the fork point is %d", ErrConflict, s.ParentID, plen, s.ForkedAt)
	}
	pdepth, err := row.Int("depth")
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if depth = pdepth + 1; depth > st.maxDepth {
		return 0, false, fmt.Errorf("%w: the fork would have %d ancestors, more than %d", ErrForkDepth, depth, st.maxDepth)
	}
	if err := st.checkFork(s, row); err != nil {
		return 0, false, err
	}
	if pp := row.String("pprincipal"); !st.visible(pp) && !s.across {
		return 0, false, fmt.Errorf("%w: parent %s belongs to %q; fork it with AcrossPrincipals to allow it", ErrForbidden, s.ParentID, pp)
	}
	if again, err := st.sameBase(ctx, s, row, base); err != nil || again {
		return 0, again, err
	}
	if _, taken := row["taken"]; taken {
		relabel(s)
		return 0, true, nil
	}
	return depth, false, nil
}

// parentLength returns the length of the parent's effective history:
// its fork point plus its own turns.
func (st *Store) parentLength(ctx context.Context, parentID string, row kg.Solution) (int, error) {
	at := 0
	if _, ok := row["pat"]; ok {
		var err error
		if at, err = row.Int("pat"); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if _, ok := row["pown"]; ok {
		n, err := row.Int("pown")
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return at + n, nil
	}
	counts, err := st.countTurns(ctx, []string{ontology.SessionIRI(parentID)})
	if err != nil {
		return 0, err
	}
	return at + counts[ontology.SessionIRI(parentID)], nil
}

// checkFork checks the tree limits for fork s of a parent described by row
// (a row of state.rq): the parent is not a worker and has fewer forks than
// the Store allows. create-fork.ru checks the same inside the update.
func (st *Store) checkFork(s *Session, row kg.Solution) error {
	if Kind(row.String("pkind")) == KindWorker {
		return fmt.Errorf("%w: parent %s is a worker, and a worker is always a leaf", ErrNotForkable, s.ParentID)
	}
	if st.maxKids <= 0 {
		return nil
	}
	n := 0
	if _, ok := row["children"]; ok {
		var err error
		if n, err = row.Int("children"); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if n >= st.maxKids {
		return fmt.Errorf("%w: parent %s has %s, the limit is %d", ErrTooManyChildren, s.ParentID, forks(n), st.maxKids)
	}
	return nil
}

// forks returns "1 fork", "2 forks".
func forks(n int) string {
	if n == 1 {
		return "1 fork"
	}
	return fmt.Sprintf("%d forks", n)
}

// sameBase checks, for a new fork s, that its parent's turn at the fork
// point minus one, as stored (row: state.rq), carries base, the chain
// digest of the prefix s holds: that the fork inherits the prefix its
// author saw. The create update checks it again, atomically; this check
// says what is wrong. When that turn was stored before the hash chain
// (it has no digest), sameBase adds the chain to the parent's history
// (rechain) and reports that Persist must read the state again.
func (st *Store) sameBase(ctx context.Context, s *Session, row kg.Solution, base string) (again bool, err error) {
	if s.ForkedAt == 0 {
		return false, nil // a fork at 0 inherits nothing
	}
	k := s.ForkedAt - 1
	if _, ok := row["based"]; !ok {
		return false, fmt.Errorf("%w: parent %s holds no turn %d in its history as stored now (rewound since this fork was made?)", ErrConflict, s.ParentID, k)
	}
	switch got := row.String("basedigest"); got {
	case base:
		return false, nil
	case "":
		if _, err := st.rechain(ctx, s.ParentID); err != nil {
			return false, fmt.Errorf("add the hash chain to parent %s: %w", s.ParentID, err)
		}
		return true, nil
	default:
		return false, fmt.Errorf("%w: turn %d of parent %s as stored is not the one this fork was made from (the parent was rewound, or another writer appended first); load the parent again and fork it", ErrConflict, k, s.ParentID)
	}
}

// sameFork checks that the stored fork fields of s are the caller's.
func sameFork(s *Session, row kg.Solution) error {
	wantParent := ""
	if s.ParentID != "" {
		wantParent = ontology.SessionIRI(s.ParentID)
	}
	if got := row.String("parent"); got != wantParent {
		return fmt.Errorf("%w: stored parent %q, the caller's %q (detached or forked elsewhere?)", ErrConflict, ontology.SessionID(got), s.ParentID)
	}
	at := 0
	if _, ok := row["at"]; ok {
		var err error
		if at, err = row.Int("at"); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if at != s.ForkedAt {
		return fmt.Errorf("%w: stored fork point %d, the caller's %d", ErrConflict, at, s.ForkedAt)
	}
	branch := row.String("branch")
	if branch == "" {
		branch = MainBranch
	}
	if branch != s.Branch {
		return fmt.Errorf("%w: stored branch %q, the caller's %q", ErrConflict, branch, s.Branch)
	}
	return nil
}
