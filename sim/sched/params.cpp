// Host side: isolation, host tick, interrupt costs, noise.
#include "sim/model_params.h"

namespace kvmsim {

void declare_sched_params(ParamRegistry& r) {
  r.declare({"host.isolcpus", ParamType::IntList, "[]", "cpu", 0, 4095, {},
             "Isolated pCPUs (isolcpus/nohz_full); vCPU threads are pinned to them."});
  r.declare({"host.tick_hz", ParamType::Int, "1", "Hz", 0, 1000, {},
             "Host tick on the isolated pCPUs (nohz_full keeps a 1 Hz residual tick)."});
  r.declare({"cost.host.irq_entry", ParamType::Dist, "300ns", "time", {}, {}, {},
             "Host hard-IRQ entry (IDT, irq_enter) up to the handler."});
  r.declare({"cost.host.irq_exit", ParamType::Dist, "200ns", "time", {}, {}, {},
             "Host irq_exit() and return, without softirq work."});
  r.declare({"cost.host.hrtimer_interrupt", ParamType::Dist, "400ns", "time", {}, {}, {},
             "Host hrtimer_interrupt() bookkeeping incl. clockevent reprogramming."});
  r.declare({"cost.host.ipi_latency", ParamType::Dist, "400cyc", "time", {}, {}, {},
             "Physical IPI between two pCPUs: from the sender's ICR write until the target "
             "takes the interrupt (or, in non-root mode, starts posted-interrupt processing)."});
  r.declare({"cost.host.reschedule_ipi", ParamType::Dist, "100ns", "time", {}, {}, {},
             "scheduler_ipi() handler of RESCHEDULE_VECTOR (irq entry/exit counted apart)."});
  r.declare({"cost.host.posted_intr_ipi", ParamType::Dist, "50ns", "time", {}, {}, {},
             "Host handler of POSTED_INTR_VECTOR when the notification lands in root mode."});
  r.declare({"cost.host.tick", ParamType::Dist, "2us", "time", {}, {}, {},
             "Host tick_sched_timer() work (scheduler tick, RCU, accounting)."});
  r.declare({"noise.irq.rate_hz", ParamType::Double, "0", "Hz", 0, 1e6, {},
             "Rate of host device interrupts/IPIs landing on each vCPU's pCPU (Poisson)."});
  r.declare({"noise.irq.duration", ParamType::Dist, "5us", "time", {}, {}, {},
             "Handler time of one such host interrupt."});
  r.declare({"noise.softirq.rate_hz", ParamType::Double, "0", "Hz", 0, 1e6, {},
             "Rate at which deferred host work (softirq, irq_work) is raised on each pCPU; "
             "it runs at the next irq_exit there."});
  r.declare({"noise.softirq.duration", ParamType::Dist, "5us", "time", {}, {}, {},
             "Run time of one deferred work item."});
}

}  // namespace kvmsim
