// Counters a component keeps per instance and sums over instances at the end
// of a run (as kvm_stat sums struct kvm_vcpu_stat over vCPUs). A stats struct
// names its fields once, next to them:
//
//   struct HaltStats {
//     std::uint64_t halts = 0, blocks = 0;
//     using Fields = CounterFields<HaltStats, &HaltStats::halts, &HaltStats::blocks>;
//   };
//
// and `a += b` adds every listed field (a field that is a high-water mark is
// kept out of the list, and the struct defines its own operator+=).
#pragma once

namespace kvmsim {

template <class S, auto... Members>
struct CounterFields {
  static void add(S& into, const S& from) { ((into.*Members += from.*Members), ...); }
};

template <class S>
S& sum_counters(S& into, const S& from) {
  S::Fields::add(into, from);
  return into;
}

template <class S, class = typename S::Fields>
S& operator+=(S& into, const S& from) {
  return sum_counters(into, from);
}

}  // namespace kvmsim
