// Host CPU topology as a graph (Boost.Graph): machine -> sockets -> cores ->
// hardware threads (pCPUs). Linux numbers the first thread of every core
// first, then the SMT siblings (cpu = thread * sockets * cores + socket *
// cores + core), as on the Intel servers the platforms describe.
#pragma once

#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace kvmsim {

class Topology {
 public:
  enum class Kind { Machine, Socket, Core, Thread };
  struct Node {
    Kind kind = Kind::Machine;
    int index = 0;  // socket / core-in-socket / pCPU number
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Node>;

  Topology(int sockets, int cores_per_socket, int threads_per_core);

  [[nodiscard]] int cpus() const { return static_cast<int>(cpu_vertex_.size()); }
  [[nodiscard]] int sockets() const { return sockets_; }
  [[nodiscard]] int socket_of(int cpu) const;
  [[nodiscard]] int core_of(int cpu) const;                // machine-wide core number
  [[nodiscard]] std::vector<int> siblings(int cpu) const;  // SMT siblings, excluding cpu
  // Scheduling-domain spans, ascending, including cpu itself (the kernel's
  // cpu_smt_mask / cpu_coregroup_mask / cpu_online_mask). The last-level
  // cache is per socket, as on the Intel servers the platforms describe.
  [[nodiscard]] std::vector<int> smt_span(int cpu) const;
  [[nodiscard]] std::vector<int> llc_span(int cpu) const;
  [[nodiscard]] bool shares_llc(int a, int b) const { return socket_of(a) == socket_of(b); }
  [[nodiscard]] int threads_per_core() const { return threads_; }
  [[nodiscard]] const Graph& graph() const { return g_; }

 private:
  Graph g_;
  int sockets_, cores_, threads_;
  std::vector<Graph::vertex_descriptor> cpu_vertex_;
  std::vector<Graph::vertex_descriptor> cpu_core_;
  std::vector<Graph::vertex_descriptor> socket_vertex_;
  std::vector<int> cpu_socket_;
};

}  // namespace kvmsim
