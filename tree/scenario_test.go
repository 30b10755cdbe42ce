package tree_test

import "github.com/saver-dev/saver"

// cp is a checkpoint of the root namespace. Ids in these tests are short
// but, like LangGraph's uuid6 ids, sort in creation order.
func cp(id, parent, source string, step int64) saver.Node {
	return saver.Node{ThreadID: "t", ID: id, ParentID: parent, Source: source, Step: step}
}

// sub is a checkpoint of subgraph namespace ns; parents is its metadata
// "parents" map, which only a subgraph's first checkpoint needs.
func sub(ns, id, parent string, step int64, parents map[string]string) saver.Node {
	source := "loop"
	if step < 0 {
		source = "input"
	}
	return saver.Node{ThreadID: "t", NS: ns, ID: id, ParentID: parent, Source: source, Step: step, Parents: parents}
}

func failed(n saver.Node) saver.Node { n.HasError = true; return n }
func paused(n saver.Node) saver.Node { n.HasInterrupt = true; return n }

// Scenarios, as LangGraph writes them.
var (
	// START -> a -> b -> c: an input checkpoint, then one per superstep.
	chain = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "02", "loop", 1),
		cp("04", "03", "loop", 2),
	}
	// invoke(None, checkpoint_id=02) puts a "fork" child of 02; the old
	// continuation 03..04 is left behind.
	timeTravel = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "02", "loop", 1),
		cp("04", "03", "loop", 2),
		cp("05", "02", "fork", 1),
		cp("06", "05", "loop", 2),
	}
	// update_state on old checkpoint 02 forks an "update" child of it;
	// update_state on the head (06) just continues the chain.
	updateState = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "02", "loop", 1),
		cp("04", "02", "update", 1),
		cp("05", "04", "loop", 2),
		cp("06", "05", "update", 3),
	}
	// The step after 02 fails (error write on 02, no new checkpoint); a
	// retry resumes from 02 and succeeds, the error write stays. Then the
	// step after 04 fails and is not retried yet.
	retries = []saver.Node{
		cp("01", "", "input", -1),
		failed(cp("02", "01", "loop", 0)),
		cp("03", "02", "loop", 1),
		failed(cp("04", "03", "loop", 2)),
	}
	// The step after 03 interrupts and is resumed; the one after 05 waits.
	interrupts = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		paused(cp("03", "02", "loop", 1)),
		cp("04", "03", "loop", 2),
		paused(cp("05", "04", "loop", 3)),
	}
	// A step fails at 03 and the user time-travels to 02 instead of
	// retrying: the failed attempt ends an abandoned branch.
	failedThenForked = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		failed(cp("03", "02", "loop", 1)),
		cp("04", "02", "fork", 1),
		cp("05", "04", "loop", 2),
	}
	// An abandoned branch forked again: 03 has an older child 04 and a
	// newer fork 05, and the thread went on from 02 via 06.
	branchOfBranch = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "02", "loop", 1),
		cp("04", "03", "loop", 2),
		cp("05", "03", "fork", 2),
		cp("06", "02", "fork", 1),
		cp("07", "06", "loop", 2),
	}
	// Node "outer" (task t1) runs a subgraph during the step after 02; it
	// runs "inner" (task t2) after its own checkpoint 11. A subgraph called
	// again within the same task gets a numeric segment: "outer:t1|1" runs
	// under 02, "outer:t1|inner:t2|2" under 11.
	subgraphs = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "02", "loop", 1),
		cp("04", "03", "loop", 2),
		sub("outer:t1", "10", "", -1, map[string]string{"": "02"}),
		sub("outer:t1", "11", "10", 0, nil),
		sub("outer:t1", "12", "11", 1, nil),
		sub("outer:t1|inner:t2", "20", "", -1, map[string]string{"": "02", "outer:t1": "11"}),
		sub("outer:t1|inner:t2", "21", "20", 0, nil),
		sub("outer:t1|1", "30", "", -1, map[string]string{"": "02"}),
		sub("outer:t1|inner:t2|2", "40", "", -1, map[string]string{"": "02", "outer:t1": "11"}),
	}
	// Parallel subgraph tasks a and b under 02; b is interrupted. "c" is a
	// checkpointer=True subgraph: task ids stripped, its chain carries on
	// across parent steps, so only its first checkpoint hangs under 02.
	namespaces = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		paused(cp("03", "02", "loop", 1)),
		sub("a:1", "10", "", -1, map[string]string{"": "02"}),
		sub("a:1", "11", "10", 0, nil),
		sub("b:2", "20", "", -1, map[string]string{"": "02"}),
		paused(sub("b:2", "21", "20", 0, nil)),
		sub("c", "30", "", -1, map[string]string{"": "02"}),
		sub("c", "31", "30", 0, map[string]string{"": "03"}),
	}
	// 03 was pruned, so 04 lost its parent; subgraph roots name a parent
	// checkpoint that is gone, or none at all.
	orphans = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("04", "03", "loop", 2),
		cp("05", "04", "loop", 3),
		sub("s:1", "10", "", -1, map[string]string{"": "03"}),
		sub("s:2", "20", "", -1, nil),
		sub("s:2", "21", "20", 0, nil),
	}
	// Client-given ids that loop: 03 -> 05 -> 04 -> 03, with 06 hanging
	// off the loop, and a checkpoint that is its own parent.
	cycles = []saver.Node{
		cp("01", "", "input", -1),
		cp("02", "01", "loop", 0),
		cp("03", "05", "loop", 1),
		cp("04", "03", "loop", 2),
		cp("05", "04", "loop", 3),
		cp("06", "04", "loop", 3),
		sub("x:1", "90", "90", 0, nil),
	}
)
