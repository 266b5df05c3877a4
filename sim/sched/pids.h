// The pids of the host's threads, one range per kind. The ranges are disjoint
// for every value the parameters allow (vm.count x vm.vcpus <= 65536 vCPUs,
// host.hog.count <= 4096, <= 8192 pCPUs), so a pid names one thread in the
// traces and SchedEntity::id, which breaks vruntime ties, is unique. They
// keep one order, the tie-break's: vCPU threads < CPU hogs < kworkers < the
// kernel's per-CPU kthreads.
#pragma once

namespace kvmsim::pids {

inline constexpr int kVcpuBase = 1000;        // "CPU n/KVM": + the vCPU's id
inline constexpr int kHogBase = 100000;       // "stress-ng": + the hog's index
inline constexpr int kKworkerBase = 200000;   // "kworker/N:1": + the pCPU
inline constexpr int kKthreadBase = 1000000;  // "watchdog/N", "migration/N": + the pCPU

}  // namespace kvmsim::pids
