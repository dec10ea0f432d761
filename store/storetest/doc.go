// Package storetest is the conformance suite of drydock.Store. Every backend
// runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) drydock.Store {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, storetest.WithReopen(reopen))
//
// The suite specifies what the interface's comments leave open: error codes
// for each failure, the queue's ordering (oldest CreatedAt first), lease
// expiry and recovery, cancel semantics, gapless event seqs under
// concurrency, list limits (jobs: 50 by default, at most 500; events: 100 and
// 1000), and durability across Close when a reopen hook is given. It uses
// only the drydock.Store interface, so it holds every backend to the same
// behaviour.
package storetest
