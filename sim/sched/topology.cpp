#include "sim/sched/topology.h"

#include <algorithm>

#include <boost/graph/graph_traits.hpp>

namespace kvmsim {

Topology::Topology(int sockets, int cores_per_socket, int threads_per_core)
    : sockets_(sockets), cores_(cores_per_socket), threads_(threads_per_core) {
  const int n = sockets * cores_per_socket * threads_per_core;
  cpu_vertex_.resize(static_cast<std::size_t>(n));
  cpu_core_.resize(static_cast<std::size_t>(n));
  cpu_socket_.resize(static_cast<std::size_t>(n));
  const auto machine = boost::add_vertex(Node{Kind::Machine, 0}, g_);
  for (int s = 0; s < sockets; ++s) {
    const auto sv = boost::add_vertex(Node{Kind::Socket, s}, g_);
    boost::add_edge(machine, sv, g_);
    socket_vertex_.push_back(sv);
    for (int c = 0; c < cores_per_socket; ++c) {
      const auto cv = boost::add_vertex(Node{Kind::Core, s * cores_per_socket + c}, g_);
      boost::add_edge(sv, cv, g_);
      for (int t = 0; t < threads_per_core; ++t) {
        const int cpu = t * sockets * cores_per_socket + s * cores_per_socket + c;
        const auto tv = boost::add_vertex(Node{Kind::Thread, cpu}, g_);
        boost::add_edge(cv, tv, g_);
        cpu_vertex_[static_cast<std::size_t>(cpu)] = tv;
        cpu_core_[static_cast<std::size_t>(cpu)] = cv;
        cpu_socket_[static_cast<std::size_t>(cpu)] = s;
      }
    }
  }
}

int Topology::socket_of(int cpu) const { return cpu_socket_.at(static_cast<std::size_t>(cpu)); }

int Topology::core_of(int cpu) const {
  return g_[cpu_core_.at(static_cast<std::size_t>(cpu))].index;
}

std::vector<int> Topology::siblings(int cpu) const {
  std::vector<int> out;
  const auto core = cpu_core_.at(static_cast<std::size_t>(cpu));
  for (auto [it, end] = boost::adjacent_vertices(core, g_); it != end; ++it)
    if (g_[*it].index != cpu) out.push_back(g_[*it].index);
  return out;
}

}  // namespace kvmsim

namespace kvmsim {

std::vector<int> Topology::smt_span(int cpu) const {
  std::vector<int> out = siblings(cpu);
  out.push_back(cpu);
  std::sort(out.begin(), out.end());
  return out;
}

// Walks socket -> cores -> threads in the graph.
std::vector<int> Topology::llc_span(int cpu) const {
  std::vector<int> out;
  const auto socket = socket_vertex_.at(static_cast<std::size_t>(socket_of(cpu)));
  for (auto [c, cend] = boost::adjacent_vertices(socket, g_); c != cend; ++c)
    for (auto [t, tend] = boost::adjacent_vertices(*c, g_); t != tend; ++t)
      out.push_back(g_[*t].index);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kvmsim
