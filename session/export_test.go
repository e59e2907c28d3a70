package session

// Queued returns how many writes of st wait for its request in flight
// (group commit): how the tests of package session_test know that the
// writes they started have queued, to force a batch.
func Queued(st *Store) int {
	if st.batch == nil {
		return 0
	}
	st.batch.mu.Lock()
	defer st.batch.mu.Unlock()
	return len(st.batch.queue)
}

// AppendTemplate returns append.ru as Persist binds it.
func AppendTemplate() string { return uAppend }
