// KAI's action benchmarks at the sizes podmuster's `make bench-kai` compares, with decision counts.
//
// Why: KAI's benchmark file runs its actions at 10 to 100 nodes and reports only times.
// benchmarks/kai.py copies this file into KAI's pkg/scheduler/actions (v0.17.0) and runs
// it beside podmuster on the same topologies, built by KAI's own benchmark helpers, so
// both sides' times and decisions can be compared case by case. Cases come from the
// environment: PODMUSTER_KAI_CASES="name:action:kind:nodes:jobs;..." with action one of
// allocate, reclaim, preempt, consolidation or cycle (KAI's five actions in its order)
// and kind one of pending, running, mixed, manyqueues (20 queues) or gangs (4 pods a job). After the timed loop one more session runs
// the action(s) and its pods are counted by status: binds (allocated, binding, bound),
// evicted (releasing) and pipelined, reported as metrics beside ns/op, with the
// process's CPU time per run (cpu-ns/op: user and system, every thread, GC included),
// which other load on the machine inflates far less than the wall time.

package actions_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/allocate"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/consolidation"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/preempt"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/reclaim"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/actions/stalegangeviction"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/framework"
	"github.com/kai-scheduler/KAI-scheduler/pkg/scheduler/test_utils"
)

func podmusterActions(name string) []framework.Action {
	switch name {
	case "allocate":
		return []framework.Action{allocate.New()}
	case "reclaim":
		return []framework.Action{reclaim.New()}
	case "preempt":
		return []framework.Action{preempt.New()}
	case "consolidation":
		return []framework.Action{consolidation.New()}
	case "cycle":
		return []framework.Action{
			allocate.New(), consolidation.New(), reclaim.New(), preempt.New(), stalegangeviction.New(),
		}
	}
	return nil
}

func podmusterTopology(kind string, nodes, jobs int) (test_utils.TestTopologyBasic, bool) {
	switch kind {
	case "pending":
		return createBenchmarkTopology(nodes, jobs), true
	case "running":
		return createBenchmarkTopologyWithRunningJobs(nodes, jobs), true
	case "mixed":
		return createBenchmarkTopologyWithMixedJobs(nodes, jobs), true
	case "manyqueues":
		return createBenchmarkTopologyWithManyQueues(nodes, jobs, 20), true
	case "gangs":
		return createBenchmarkTopologyWithGangJobs(nodes, jobs, 4), true
	}
	return test_utils.TestTopologyBasic{}, false
}

func podmusterCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func BenchmarkPodmusterSizes(b *testing.B) {
	for _, spec := range strings.Split(os.Getenv("PODMUSTER_KAI_CASES"), ";") {
		if spec == "" {
			continue
		}
		parts := strings.Split(spec, ":")
		if len(parts) != 5 {
			b.Fatalf("case %q: want name:action:kind:nodes:jobs", spec)
		}
		nodes, errNodes := strconv.Atoi(parts[3])
		jobs, errJobs := strconv.Atoi(parts[4])
		actions := podmusterActions(parts[1])
		topology, known := podmusterTopology(parts[2], nodes, jobs)
		if errNodes != nil || errJobs != nil || actions == nil || !known {
			b.Fatalf("case %q: unknown action or kind, or a bad number", spec)
		}
		b.Run(parts[0], func(b *testing.B) {
			ctrl := gomock.NewController(b)
			defer ctrl.Finish()
			b.ResetTimer()
			cpu := podmusterCPU()
			for i := 0; i < b.N; i++ {
				ssn := test_utils.BuildSession(topology, ctrl)
				for _, action := range actions {
					action.Execute(ssn)
				}
			}
			cpu = podmusterCPU() - cpu
			b.StopTimer()
			ssn := test_utils.BuildSession(topology, ctrl)
			for _, action := range actions {
				action.Execute(ssn)
			}
			var binds, evicted, pipelined int
			for _, job := range ssn.ClusterInfo.PodGroupInfos {
				for _, task := range job.GetAllPodsMap() {
					switch task.Status {
					case pod_status.Allocated, pod_status.Binding, pod_status.Bound:
						binds++
					case pod_status.Releasing:
						evicted++
					case pod_status.Pipelined:
						pipelined++
					}
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(binds), "binds")
			b.ReportMetric(float64(evicted), "evicted")
			b.ReportMetric(float64(pipelined), "pipelined")
		})
	}
}
