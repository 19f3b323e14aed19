// kloop backend/cuda: the executor's own device code, behind plain host functions.
//
// Responsibility: the small kernels the timing protocol needs, launched through functions a
// host translation unit can call (only device_kernels.cu is compiled by nvcc):
//   - the blocking kernel (nvbench's blocking_kernel.cuh idea): one thread spins on a host-mapped
//     flag so the stream it occupies — and, on the legacy default stream, every blocking stream —
//     holds the start event, the call and the end event until the host has queued them all.
//     It gives up after `timeout_ns` (globaltimer) and sets *timed_out, so a candidate that
//     enqueues more work than the launch queue holds cannot deadlock the runner.
//   - the read flush: every 16-byte vector of a buffer read once through L2 (ld.global.cg), so
//     L2 ends up holding the buffer's clean lines; the lines it evicts — the previous call's
//     dirty outputs included — are written back during the flush, not inside the next timed
//     call. It writes nothing unless the buffer (zero-filled by the executor) is not zero.
//   - the first difference: the lowest byte offset at which two device buffers differ, written
//     by atomicMin into a 64-bit result the caller set to all ones (no difference leaves it so).
//     The checker compares every input with its pristine copy after every call with it.
//   - the clock probe (nvbench's timestamps kernel idea): Δclock64 / Δglobaltimer on one SM, the
//     effective SM clock in MHz, used when NVML is unavailable.
#pragma once

#include <cuda_runtime_api.h>

namespace kloop::backend::cuda {

cudaError_t launch_blocking_kernel(const volatile int* release_flag_device, int* timed_out_device,
                                   unsigned long long timeout_ns, cudaStream_t stream);

cudaError_t launch_read_flush(const void* buffer, unsigned long long bytes, unsigned* sink_device, int sms,
                              cudaStream_t stream);

// *result_device := min(*result_device, the first byte offset where a and b differ).
cudaError_t launch_first_difference(const void* a, const void* b, unsigned long long bytes,
                                    unsigned long long* result_device, int sms, cudaStream_t stream);

// Writes {clock64 delta, globaltimer delta (ns)} into result_device[0..1].
cudaError_t launch_clock_probe(unsigned long long* result_device, long long spin_cycles, cudaStream_t stream);

}  // namespace kloop::backend::cuda
