// Unit under test: the black-box part of spec/spec_loader — [op] mode = "blackbox", [repo],
// [gate], [bench]: the loaded model, and every rule's error with its line and dotted field.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using kloop::spec_error;
using kloop::platform::scoped_temp_dir;
using kloop::platform::write_file_atomic;
using kloop::spec::parse_op_spec;

namespace {

const char* base_spec = R"([op]
name = "softplus"
mode = "blackbox"
frozen = ["tests/test_op.py", "ops/naive.py"]

[repo]
target = "ops/kernel.py"

[gate]
command = ["python3", "-m", "pytest", "tests/test_op.py", "-q"]
env = { OMP_NUM_THREADS = "1" }
timeout = 300

[bench]
command = ["python3", "bench.py"]
shapes = ["n64_d256", "fwd/n128_d100"]
rounds = 3
)";

class BlackboxSpecTest : public ::testing::Test {
protected:
    scoped_temp_dir m_dir{"kloop-bb-spec-test"};
    fs::path m_root;

    void SetUp() override {
        m_root = fs::weakly_canonical(m_dir.path());
        write_file_atomic(m_root / "ops" / "kernel.py", "x");
        write_file_atomic(m_root / "ops" / "naive.py", "x");
        write_file_atomic(m_root / "tests" / "test_op.py", "x");
        write_file_atomic(m_root / "bench.py", "x");
    }

    kloop::spec::op_spec parse(const std::string& text) { return parse_op_spec(text, m_root / "op.toml", m_root); }

    // Replaces the first occurrence of `from` in the base spec.
    static std::string edit(const std::string& from, const std::string& to) {
        std::string s = base_spec;
        const auto at = s.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        if (at != std::string::npos) s.replace(at, from.size(), to);
        return s;
    }

    void expect_error(const std::string& text, const std::string& field, int line, const std::string& words) {
        try {
            (void)parse(text);
            ADD_FAILURE() << "no error; wanted " << field;
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), field) << e.what();
            EXPECT_EQ(e.get_line(), line) << e.what();
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
            EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        }
    }
};

TEST_F(BlackboxSpecTest, LoadsTheModel) {
    const auto spec = parse(base_spec);
    ASSERT_TRUE(spec.blackbox);
    const auto& bb = *spec.blackbox;
    EXPECT_EQ(bb.root, m_root);
    EXPECT_EQ(bb.target, fs::path("ops/kernel.py"));
    EXPECT_EQ(bb.gate.argv.size(), 5u);
    EXPECT_EQ(bb.gate.argv[2], "pytest");
    ASSERT_EQ(bb.gate.env.size(), 1u);
    EXPECT_EQ(bb.gate.env[0].first, "OMP_NUM_THREADS");
    ASSERT_TRUE(bb.gate.timeout_s);
    EXPECT_DOUBLE_EQ(*bb.gate.timeout_s, 300);
    EXPECT_FALSE(bb.bench.timeout_s);
    EXPECT_EQ(bb.rounds, 3);
    EXPECT_FALSE(bb.round_time_s);  // unset: no bound on a bench run
    ASSERT_EQ(bb.bench_shapes.size(), 2u);
    EXPECT_EQ(bb.bench_shapes[0].get_key(), "bench/n64_d256");
    EXPECT_EQ(bb.bench_shapes[1].get_key(), "fwd/n128_d100");
    // frozen: op.toml first, then the repository files (absolute)
    ASSERT_EQ(spec.frozen.size(), 3u);
    EXPECT_EQ(spec.frozen[0], m_root / "op.toml");
    EXPECT_EQ(spec.frozen[1], m_root / "tests" / "test_op.py");
    EXPECT_TRUE(spec.reference.empty());
    EXPECT_TRUE(spec.modes.empty());
    // the bench shapes are mirrored for the contract and the memory key
    ASSERT_EQ(spec.shapes.size(), 2u);
    EXPECT_EQ(spec.shapes[0].name, "n64_d256");
    EXPECT_EQ(spec.shapes[1].name, "fwd/n128_d100");
    EXPECT_TRUE(spec.shapes[0].bench);
    EXPECT_FALSE(spec.shapes[0].gate);
}

TEST_F(BlackboxSpecTest, RootRelativeToTheOpDirectory) {
    write_file_atomic(m_root / "kloop" / "softplus" / "placeholder", "");
    const auto spec = parse_op_spec(edit("[repo]\n", "[repo]\nroot = \"../..\"\n"), m_root / "kloop" / "softplus" / "op.toml",
                                    m_root / "kloop" / "softplus");
    EXPECT_EQ(spec.blackbox->root, m_root);
    EXPECT_EQ(spec.frozen[1], m_root / "tests" / "test_op.py");
}

TEST_F(BlackboxSpecTest, NativeModeIsTheDefaultAndRejectsBlackboxTables) {
    expect_error(edit("mode = \"blackbox\"\n", ""), "repo", 5, "only used in black-box mode");
}

TEST_F(BlackboxSpecTest, Errors) {
    expect_error(edit("mode = \"blackbox\"", "mode = \"blackbx\""), "op.mode", 3, "did you mean 'blackbox'?");
    expect_error(edit("[repo]\n", "[repo]\nroot = \"nope\"\n"), "repo.root", 7, "does not exist");
    expect_error(edit("target = \"ops/kernel.py\"", "target = \"ops/kernel.cu\""), "repo.target", 7, "does not exist");
    expect_error(edit("target = \"ops/kernel.py\"", "target = \"../kernel.py\""), "repo.target", 7, "leaves the repository root");
    expect_error(edit("target = \"ops/kernel.py\"", "target = \"/abs/kernel.py\""), "repo.target", 7, "relative");
    expect_error(edit("target = \"ops/kernel.py\"", "targt = \"ops/kernel.py\""), "repo.targt", 7, "did you mean 'target'?");
    expect_error(edit("[repo]\n", "[repo]\nexclude = [\"ops\"]\n"), "repo.exclude[0]", 7, "would leave the target");
    expect_error(edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]", "frozen = [\"tests/test_op.py\", \"ops/kernel.py\"]"),
                 "op.frozen[1]", 4, "cannot be frozen");
    expect_error(edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]", "frozen = []"), "op.frozen", 4, "at least one");
    expect_error(edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]\n", ""), "op.frozen", 1, "missing required field 'frozen'");
    expect_error(edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]", "frozen = [\"tests/missing.py\"]"), "op.frozen[0]", 4,
                 "does not exist");
    expect_error(edit("mode = \"blackbox\"\n", "mode = \"blackbox\"\nreference = \"ops/naive.py\"\n"), "op.reference", 4,
                 "not used in black-box mode");
    expect_error(std::string(base_spec) + "\n[dims]\nnames = [\"N\"]\n", "dims", 19, "not used in black-box mode");
    expect_error(std::string(base_spec) + "\n[candidate]\nfiles = [\"x.py\"]\n", "candidate", 19, "not used in black-box mode");
    expect_error(edit("command = [\"python3\", \"-m\", \"pytest\", \"tests/test_op.py\", \"-q\"]",
                      "command = \"python3 -m pytest\""),
                 "gate.command", 10, "not a shell string");
    expect_error(edit("command = [\"python3\", \"-m\", \"pytest\", \"tests/test_op.py\", \"-q\"]", "command = []"),
                 "gate.command", 10, "must name a program");
    expect_error(edit("command = [\"python3\", \"-m\", \"pytest\", \"tests/test_op.py\", \"-q\"]\n", ""), "gate.command", 9,
                 "missing required field 'command'");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "env = { FLA_CI_ENV = \"1\" }"), "gate.env.FLA_CI_ENV", 11,
                 "weakens the gate");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "env = { SKIP_TEST_FOO = \"1\" }"), "gate.env.SKIP_TEST_FOO", 11,
                 "refused pattern 'SKIP_TEST_*'");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "env = { OMP_NUM_THREADS = 1 }"), "gate.env.OMP_NUM_THREADS", 11,
                 "must be a string");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "env = { OMP_NUM_THREADS = \"1\" }\nrefuse_env = [\"FAST-MODE\"]"),
                 "gate.refuse_env[0]", 12, "not a variable name");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "refuse_env = [\"MY_*\"]\nenv = { MY_FAST = \"1\" }"),
                 "gate.env.MY_FAST", 12, "refused pattern 'MY_*'");
    expect_error(edit("env = { OMP_NUM_THREADS = \"1\" }", "pass_env = [\"SKIP_*\"]"), "gate.pass_env[0]", 11,
                 "would pass the refused");
    expect_error(edit("timeout = 300", "timeout = 0"), "gate.timeout", 12, "positive");
    expect_error(edit("timeout = 300", "timeot = 300"), "gate.timeot", 12, "did you mean 'timeout'?");
    expect_error(edit("shapes = [\"n64_d256\", \"fwd/n128_d100\"]\n", ""), "bench.shapes", 14, "missing required field 'shapes'");
    expect_error(edit("shapes = [\"n64_d256\", \"fwd/n128_d100\"]", "shapes = []"), "bench.shapes", 16, "at least one");
    expect_error(edit("shapes = [\"n64_d256\", \"fwd/n128_d100\"]", "shapes = [\"a\", \"a\"]"), "bench.shapes[1]", 16,
                 "listed twice");
    expect_error(edit("shapes = [\"n64_d256\", \"fwd/n128_d100\"]", "shapes = [\"a b\"]"), "bench.shapes[0]", 16,
                 "\"mode/name\"");
    expect_error(edit("rounds = 3", "rounds = 0"), "bench.rounds", 17, "from 1 to 100");
    expect_error(edit("rounds = 3", "rounds = 3\nround_time_s = 0"), "bench.round_time_s", 18, "positive number of seconds");
    expect_error(edit("rounds = 3", "rounds = 3\nround_time_s = \"1m\""), "bench.round_time_s", 18, "must be a number");
    EXPECT_DOUBLE_EQ(*parse(edit("rounds = 3", "rounds = 3\nround_time_s = 12.5")).blackbox->round_time_s, 12.5);
    expect_error(edit("[bench]\n", "[bench]\ncwd = \"nope\"\n"), "bench.cwd", 15, "does not exist");
    expect_error(edit("[gate]\n", ""), "repo.command", 9, "unknown field 'command'");  // the keys land in [repo]
}

TEST_F(BlackboxSpecTest, ARegistryBenchIsKloopsOwnModuleAndTimesBothSidesInOneProcess) {
    write_file_atomic(m_root / "benchmarks" / "ops" / "registry.py", "x");
    const std::string registry = "[bench]\nregistry = { op = \"chunk_gla\", modes = [\"fwd\"], python = \"python\" }\n"
                                 "shapes = [\"fwd/B1_T8192_H96_D128\"]\n";
    std::string text = edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]",
                            "frozen = [\"tests/test_op.py\", \"ops/naive.py\", \"benchmarks/ops/registry.py\"]");
    text = text.substr(0, text.find("[bench]")) + registry;
    const auto spec = parse(text);
    const auto& bb = *spec.blackbox;
    ASSERT_TRUE(bb.bench_registry);
    EXPECT_EQ(bb.bench_registry->op, "chunk_gla");
    EXPECT_EQ(bb.bench_registry->file, "benchmarks/ops/registry.py");
    EXPECT_EQ(bb.bench.argv, (std::vector<std::string>{"python", "-m", "kloop_worker.fla_registry", "--op", "chunk_gla",
                                                       "--registry", "benchmarks/ops/registry.py", "--modes", "fwd"}));
    EXPECT_TRUE(bb.bench_sides);
    EXPECT_FALSE(parse(text + "sides = false\n").blackbox->bench_sides);
    EXPECT_FALSE(parse(base_spec).blackbox->bench_sides);  // a command bench: separate processes unless it says so
    EXPECT_TRUE(parse(std::string(base_spec) + "sides = true\n").blackbox->bench_sides);

    expect_error(text + "command = [\"python3\", \"bench.py\"]\n", "bench.command", 17, "either 'command' or 'registry'");
    expect_error(text + "sides = 1\n", "bench.sides", 17, "true or false");
    const std::string unfrozen = std::string(base_spec).substr(0, std::string(base_spec).find("[bench]")) + registry;
    expect_error(unfrozen, "bench.registry.file", 15, "list it in op.frozen");
    std::string bad_mode = text;
    const std::string modes_field = "modes = [\"fwd\"]";
    bad_mode.replace(bad_mode.find(modes_field), modes_field.size(), "modes = [\"bwd\"]");
    expect_error(bad_mode, "bench.registry.modes[0]", 15, "unknown mode 'bwd'");
    std::string no_op = text;
    const std::string op_field = "op = \"chunk_gla\", ";
    no_op.replace(no_op.find(op_field), op_field.size(), "");
    expect_error(no_op, "bench.registry.op", 15, "missing required field 'op'");
}

TEST_F(BlackboxSpecTest, FrozenFilesStayInsideTheRootThroughLinks) {
    fs::create_symlink("/etc/passwd", m_root / "tests" / "passwd_link.py");
    expect_error(edit("frozen = [\"tests/test_op.py\", \"ops/naive.py\"]", "frozen = [\"tests/passwd_link.py\"]"),
                 "op.frozen[0]", 4, "outside the repository root");
}

TEST_F(BlackboxSpecTest, MissingTablesAreNamed) {
    std::string no_bench = base_spec;
    no_bench = no_bench.substr(0, no_bench.find("[bench]"));
    expect_error(no_bench, "bench", 0, "missing required table [bench]");
}

TEST_F(BlackboxSpecTest, CwdInsideTheRoot) {
    const auto spec = parse(edit("[bench]\n", "[bench]\ncwd = \"ops\"\n"));
    EXPECT_EQ(spec.blackbox->bench.cwd, fs::path("ops"));
    EXPECT_TRUE(spec.blackbox->gate.cwd.empty());
}

TEST_F(BlackboxSpecTest, TheFixtureSpecLoads) {
    const auto spec = kloop::spec::load_op_spec(fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "fixtures" / "blackbox_repo");
    ASSERT_TRUE(spec.blackbox);
    EXPECT_EQ(spec.blackbox->target, fs::path("ops/kernel.py"));
    EXPECT_GE(spec.frozen.size(), 3u);
}

}  // namespace
