// The steps a guest CPU's kernel context has queued before it continues
// (GuestKernel's process context, GuestIrq's handler), in order: a ring
// (sim/core/ring_fifo.h), since a context queues a few steps at a time.
#pragma once

#include "sim/core/ring_fifo.h"
#include "sim/vmx/guest_step.h"

namespace kvmsim {

using StepQueue = RingFifo<GuestStep>;

}  // namespace kvmsim
