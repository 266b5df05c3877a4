#include "sim/vmx/exit_handlers.h"

#include <stdexcept>
#include <string>

namespace kvmsim {

RegisterExitHandler::RegisterExitHandler(ExitReason r, const char* cost_key,
                                         Tsc (*fn)(Vcpu&, Tsc, Tsc)) {
  ExitHandler& h = g_kvm_vmx_exit_handlers.at(static_cast<std::size_t>(r));
  if (h.fn) throw std::logic_error("two exit handlers for " + std::string(exit_reason_name(r)));
  h.fn = fn;
  h.cost_key = cost_key;
}

}  // namespace kvmsim
