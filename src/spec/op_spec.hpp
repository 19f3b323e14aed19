// kloop spec: the validated model of an op directory's op.toml.
//
// Responsibility: plain data describing one op — its dims, shapes (each marked gate and/or
// bench), modes (fwd, bwd, ...) with entry symbols, tensors, params, tolerances and cost
// formulas, the reference, the frozen files and build settings. Produced by load_op_spec
// (spec/spec_loader), consumed by everything else. docs/spec.md is the user-facing description.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "spec/dim_expr.hpp"
#include "spec/domain.hpp"
#include "spec/initializer.hpp"

namespace kloop::spec {

// Per-output tolerance. Every bound given must hold; at least one must be given.
//   elementwise: |out - ref| <= atol + rtol * |ref| for every element (torch.allclose semantics)
//   rel_rms:     rms(out - ref) / rms(ref) <= rel_rms (FLA's assert_close)
struct tolerance {
    std::optional<double> atol;
    std::optional<double> rtol;
    std::optional<double> rel_rms;

    [[nodiscard]] bool has_elementwise() const { return atol.has_value() || rtol.has_value(); }
};

struct tensor_spec {
    std::string name;
    kloop::dtype type = kloop::dtype::f32;
    std::vector<dim_expr> shape;   // empty = scalar tensor of one element
    initializer init;              // inputs only: the distribution of the bench (the first listed)
    std::vector<initializer> adversarial; // inputs only: the further listed distributions, gate only
    bool inout = false;            // inputs only: the candidate may modify it
    tolerance tol;                 // outputs only
    int line = 0;                  // where it is declared in op.toml
};

struct param_spec {
    std::string name;
    double value = 0.0;
    bool is_integer = false;
    std::optional<param_domain> domain;  // the mode's param_domain entry: held-out values are drawn from it
};

struct mode_spec {
    std::string name;              // "fwd", "bwd", ...
    std::string entry;             // candidate symbol
    std::string reference_entry;   // reference symbol (defaults to entry)
    std::vector<tensor_spec> inputs;
    std::vector<tensor_spec> outputs;
    std::vector<param_spec> params;
    std::optional<dim_expr> flops; // cost formulas for the roofline
    std::optional<dim_expr> bytes;
    int line = 0;
};

struct shape_spec {
    std::string name;
    dim_env dims;
    bool gate = false;
    bool bench = false;
    int line = 0;
};

// One [build] include_dirs entry: a directory relative to the op directory ("include"), or one
// inside an installed Python package, { python_package = "cutlass_library", path =
// "source/include" } (CUTLASS's headers from the PyPI package nvidia-cutlass), found at build time
// by the op's interpreter (backend/python/python_package_dir.hpp).
struct include_dir {
    std::string path;            // plain: absolute; package: relative to the package's directory
    std::string python_package;  // "" = a plain directory; else a top-level package name
    int line = 0;                // its line in op.toml
    std::string field;           // "build.include_dirs[1]", for errors
    friend bool operator==(const include_dir&, const include_dir&) = default;
};

struct build_settings {
    std::vector<std::string> flags;        // extra compiler flags (candidate and reference)
    std::vector<include_dir> include_dirs; // in op.toml's order (-I order)
    std::string arch_suffix;               // cuda: "" (sm_90) | "a" (sm_90a) | "f"; appended to the device's sm_XY
};

// Black-box mode ([op] mode = "blackbox", docs/blackbox.md): the op lives in an existing
// repository whose own test command is the gate and whose own benchmark script prints the
// timings. kloop builds nothing; it places the candidate at `target` in a temporary copy of the
// repository root and runs the commands there.
struct blackbox_command {
    std::vector<std::string> argv;         // never a shell string
    std::filesystem::path cwd;             // relative to the repository root; "" = the root
    std::vector<std::pair<std::string, std::string>> env;  // set for the command, in file order
    std::vector<std::string> pass_env;     // names (or PREFIX_*) inherited from kloop's environment
    std::optional<double> timeout_s;       // none: the --timeout option
    int line = 0;                          // the table's line in op.toml
};

struct blackbox_bench_shape {
    std::string mode;                      // "bench" unless written "mode/name"
    std::string name;
    int line = 0;
    [[nodiscard]] std::string get_key() const { return mode + "/" + name; }
};

// [bench] registry = { op, file, modes, python }: kloop's own bench module for an FLA-style op
// registry (python/kloop_worker/fla_registry.py) instead of a command the user writes.
struct blackbox_registry_bench {
    std::string op;                        // the registry's op name, e.g. "chunk_gla"
    std::filesystem::path file;            // relative to the root; default benchmarks/ops/registry.py
    std::vector<std::string> modes;        // "fwd", "fwdbwd"; empty = the module's default (both)
    std::string python = "python3";        // the interpreter that runs the module
    int line = 0;
};

struct blackbox_spec {
    std::filesystem::path root;            // absolute: [repo] root (relative to op.toml's directory)
    std::filesystem::path target;          // relative to root: the file a candidate replaces
    std::vector<std::filesystem::path> exclude;  // relative to root: left out of the copy
    blackbox_command gate;
    std::vector<std::string> refuse_env;   // [gate] refuse_env: extra refused names / PREFIX_*
    blackbox_command bench;                // with a registry: the generated command
    std::optional<blackbox_registry_bench> bench_registry;
    // The bench honours KLOOP_BENCH_SIDES: one process times both sides of an A/B, interleaved
    // (docs/blackbox.md, "One process, two sides"). Default: true with a registry, else false.
    bool bench_sides = false;
    std::vector<blackbox_bench_shape> bench_shapes;
    int rounds = 2;                        // bench runs per evaluation; A/B rounds (ABBA order)
    // [bench] round_time_s: one bench run's wall time, shared out over its shapes (the bench
    // receives KLOOP_BENCH_ROUND_TIME_S; kloop's registry module honours it). None: no bound.
    std::optional<double> round_time_s;
};

// [python] (backend = "python" only; docs/python.md): how Python candidates run.
struct python_settings {
    std::string interpreter;               // "" = $KLOOP_PYTHON, else "python3"; $KLOOP_PYTHON wins over it
    std::string device = "auto";           // "auto" | "cpu" (numpy arrays) | "cuda" (torch tensors on the GPU)
    bool allow_tf32 = false;               // TF32 matmuls for reference and candidate alike
    double aten_glue_share = 0;            // PyTorch ATen kernels a candidate may launch, as a share of
                                           // its mode's heaviest call's kernel time, before census_vendor_kernels
                                           // fails (0: none)
    // The least wall-clock limit of a runner process, seconds: a candidate whose first calls compile
    // and autotune (Triton) for minutes needs more than --timeout's default. The larger one applies.
    std::optional<double> min_timeout_s;
    int line = 0;                          // the [python] table's line (0: absent)
};

// [candidate] (not in black-box mode; docs/spec.md): files every candidate of this op is made
// of besides its source and the local headers or modules found from it, relative to the
// candidate's directory: a file, or a directory (every regular file under it). They are staged,
// snapshotted, hashed and committed with the candidate (backend/local_sources).
struct candidate_settings {
    std::vector<std::string> files;
    int line = 0;                          // the [candidate] table's line (0: absent)
};

enum class backend_kind { cpu, cuda, python };
[[nodiscard]] std::string to_string(backend_kind b);
// Accepts the op.toml spellings: cpu, cuda, python.
[[nodiscard]] std::optional<backend_kind> backend_from_string(std::string_view s);

struct op_spec {
    std::string name;
    std::string description;
    backend_kind backend = backend_kind::cpu;
    std::filesystem::path op_dir;          // absolute
    std::filesystem::path spec_file;       // absolute path of op.toml
    std::filesystem::path reference;       // absolute path of the reference source
    std::vector<std::filesystem::path> frozen; // absolute; always includes op.toml and the reference
    build_settings build;
    python_settings python;                // backend python only
    candidate_settings candidate;          // [candidate]
    std::vector<std::string> dims;         // declared dim names, in order
    // [dims] domain: empty, or one domain per declared dim (held-out shapes are drawn from it).
    std::map<std::string, dim_domain> dim_domains;
    int domain_line = 0;                   // the line of [dims] domain (0: none declared)
    std::vector<shape_spec> shapes;
    std::vector<mode_spec> modes;
    std::uint64_t fixed_seeds[2] = {1, 2}; // gate trials 0 and 1; trial 2 is drawn at check time
    // Set in black-box mode. Then reference is empty, dims and modes are empty, frozen holds
    // op.toml and the listed repository files, and shapes mirrors the bench shapes (bench only,
    // no dims) so the contract and the strategy memory key work unchanged.
    std::optional<blackbox_spec> blackbox;

    // nullptr when there is no such mode / shape.
    [[nodiscard]] const mode_spec* find_mode(const std::string& name) const;
    [[nodiscard]] const shape_spec* find_shape(const std::string& name) const;
    // The shapes marked for the gate / the bench, in spec order.
    [[nodiscard]] std::vector<const shape_spec*> get_gate_shapes() const;
    [[nodiscard]] std::vector<const shape_spec*> get_bench_shapes() const;
    // A dim domain or a param domain is declared: the gate draws held-out shapes (spec/held_out).
    [[nodiscard]] bool has_domain() const;
    // The wall-clock limit of a runner process given --timeout: the larger of it and [python]
    // min_timeout.
    [[nodiscard]] double runner_timeout_s(double option_s) const;
};

}  // namespace kloop::spec
