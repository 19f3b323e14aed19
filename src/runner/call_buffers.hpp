// kloop runner: the buffers of one call and the kl_args that points at them.
//
// Responsibility: allocate every input and output of a call_plan in guarded host buffers (red
// zones on both sides), fill inputs from their initialisers with a seed, poison outputs, keep a
// pristine copy of the inputs to prove the call did not modify them, and expose a kl_args view
// whose pointers stay valid for the object's lifetime. On a device executor every host buffer
// has a byte-identical device mirror (red zones included): prepare() uploads, collect()
// downloads, and every check then reads the host copy. On the host executor both are no-ops.
// One object = one set of addresses; the bench reuses it across samples and refills its inputs
// in place ("new values, same address").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check/guarded_buffer.hpp"
#include "kloop/kernel.h"
#include "runner/executor.hpp"
#include "runner/job.hpp"
#include "spec/initializer.hpp"

namespace kloop::runner {

struct input_change {
    std::string name;
    std::int64_t first_changed = -1;  // flat element index of the first changed element
};

struct red_zone_violation {
    std::string name;
    std::int64_t byte_offset = 0;     // relative to the buffer's first byte; negative = before
};

class call_buffers {
public:
    call_buffers(const call_plan& plan, executor_base& exec);
    ~call_buffers();
    call_buffers(const call_buffers&) = delete;
    call_buffers& operator=(const call_buffers&) = delete;

    // Host → device: inputs, outputs (poison) and every red zone. No-op on the host.
    void prepare();
    // Device → host: every buffer with its red zones, so the host checks see the call's effects.
    void collect();

    // Fill every input from its initialiser with seed-derived streams; remember a pristine copy.
    void fill_inputs(std::uint64_t seed);
    // Cheap new values for the bench: inputs whose initialiser draws every element independently
    // (normal, uniform, randint, logsigmoid_normal) get `source`'s filled values circularly
    // shifted by a seed-derived offset — a fresh arrangement of a valid sample, at memcpy speed;
    // structured ones (cu_seqlens, arange, const) are generated from the seed. Same addresses.
    void fill_inputs_shifted(const call_buffers& source, std::uint64_t seed);
    void poison_outputs();

    // Before every call the candidate sees (gate, warm-up, timed samples, checks): outputs
    // poisoned and every red zone rewritten where the candidate's buffers live (in place on the
    // host, by a fill and small copies on a mirror). Inputs are left as they are. The same
    // bytes and the same work before every call, so no call looks like a checked one.
    void prepare_call();
    // New values for a few scattered elements of every input whose initialiser draws elements
    // independently: `count` positions drawn from `seed`, each given a fresh draw from the
    // initialiser, written in place (and into the mirror) and remembered as the values the call
    // must see. Made before every bench call, so no two calls see the same input bytes: a cache
    // keyed on the inputs' contents never hits, and one keyed on part of them (a prefix, a
    // sparse sample) returns stale outputs that a checked call catches.
    void perturb_inputs(std::uint64_t seed, int count);
    // Inputs marked inout get their remembered values back (host copy and mirror).
    void restore_inout_inputs();
    // After an unchecked call: copy back every red zone and, when the mirror is cheap to read
    // (host memory), the inputs, so find_red_zone_violations / find_changed_inputs see this call.
    // Where it is not (a GPU) and the executor compares on the device, every input is compared
    // there with its pristine copy (made on the device by the first prepare_call and kept
    // current by perturb_inputs and prepare) and only the first differing offsets come back,
    // with the red zones, in one download. Outputs are not copied (they are compared on checked
    // calls only).
    void collect_guards();
    [[nodiscard]] bool guards_cover_inputs() const;

    // A checked call with both sides on one device (this set's pristine copies live where
    // `ref`'s executor computes, and no input is inout): instead of collect() and a host-side
    // refill of the reference, collect_for_check() reads back the outputs and the red zones and
    // compares the inputs on the device; ref.take_inputs_on_device(*this) gives the reference
    // the pristine inputs by device copies and poisons its outputs there; after the reference
    // call ref.collect_outputs() reads back its outputs. Only outputs cross to the host.
    [[nodiscard]] bool can_check_on_device_with(const call_buffers& ref) const;
    void collect_for_check();
    void take_inputs_on_device(const call_buffers& source);
    void collect_outputs();

    [[nodiscard]] const kl_args& get_args() const noexcept { return m_args; }
    [[nodiscard]] const call_plan& get_plan() const noexcept { return m_plan; }
    [[nodiscard]] const check::guarded_buffer& get_output(std::size_t i) const { return m_outputs.at(i); }
    [[nodiscard]] const check::guarded_buffer& get_input(std::size_t i) const { return m_inputs.at(i); }
    [[nodiscard]] std::uint64_t get_input_bytes() const;

    // Inputs not marked inout whose bytes differ from the pristine copy.
    [[nodiscard]] std::vector<input_change> find_changed_inputs() const;
    // Red-zone damage on any input or output.
    [[nodiscard]] std::vector<red_zone_violation> find_red_zone_violations() const;
    // Copy the input values (not addresses) of another buffer set with the same plan: the values
    // `other` was filled with (its pristine copy), whatever its last call did to an inout input.
    void copy_inputs_from(const call_buffers& other);

private:
    void rebuild_args();
    void remember_pristine(std::size_t i);
    void for_each_buffer(const std::function<void(check::guarded_buffer&, void*&)>& f);

    const call_plan& m_plan;
    executor_base& m_exec;
    std::vector<void*> m_device_in;        // device blocks (red zones included); empty on the host
    std::vector<void*> m_device_out;
    std::vector<spec::initializer> m_inits;
    std::vector<check::guarded_buffer> m_inputs;
    std::vector<check::guarded_buffer> m_outputs;
    // The values an input was filled with: `base` rotated left by `shift_bytes` (element k is
    // base[(k * elem + shift_bytes) mod size]). Bases are shared — by the sets that copied the
    // values and by the circularly shifted sets made from them — and never modified once shared,
    // so neither a copy nor a shift costs a second copy of the tensor.
    struct pristine_values {
        std::shared_ptr<std::vector<unsigned char>> base;
        std::size_t shift_bytes = 0;
        // Elements given new values since (perturb_inputs): byte offset → the element's bytes.
        std::map<std::size_t, std::vector<unsigned char>> patches;
        // Writes the values into dst (base.size() bytes).
        void copy_to(void* dst) const;
        // Offset of the first byte of `now` that differs from the values, or base.size().
        [[nodiscard]] std::size_t first_difference(const void* now) const;

    private:
        [[nodiscard]] std::size_t first_difference_in(const unsigned char* now, std::size_t from, std::size_t to) const;
    };
    std::vector<pristine_values> m_pristine;
    std::vector<kl_tensor> m_in_tensors;
    std::vector<kl_tensor> m_out_tensors;
    std::vector<kl_param> m_params;
    std::vector<kl_dim> m_dims;
    std::vector<std::string> m_dim_names;
    kl_args m_args{};
    // The mirror's red zones as last seen: collected since the last prepare_call, and found
    // intact by find_red_zone_violations (then prepare_call need not rewrite them).
    mutable bool m_zones_intact = false;
    bool m_zones_collected = false;
    // Inputs verified on the device (see collect_guards): per input its pristine copy (null for
    // inout and empty inputs), the device results of the comparison and their host copy.
    bool m_compare_on_device = false;
    std::vector<void*> m_device_pristine;
    std::uint64_t* m_device_differences = nullptr;
    std::vector<std::uint64_t> m_differences;
    bool m_differences_fresh = false;  // m_differences describe the last call (collect_guards)
    void make_device_pristine();
    // Queues the download of a buffer's two red zones into its host block.
    static void add_zone_spans(check::guarded_buffer& b, const void* dev, std::vector<executor_base::download_span>& spans);
    // Queues the comparison of every input with its pristine copy and the download of the results.
    void compare_inputs_on_device(std::vector<executor_base::download_span>& spans);
};

}  // namespace kloop::runner
