// Unit under test: spec/spec_loader — op.toml parsing and every validation rule, with the
// file, line and dotted field of each spec_error.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "core/error.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using kloop::spec_error;
using kloop::spec::load_op_spec;
using kloop::spec::op_spec;
using kloop::spec::parse_op_spec;

namespace {

class temp_dir {
public:
    temp_dir() {
        std::string tmpl = (fs::temp_directory_path() / "kloop-spec-test-XXXXXX").string();
        if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        m_path = fs::weakly_canonical(tmpl);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] const fs::path& get_path() const { return m_path; }

private:
    fs::path m_path;
};

void write_file(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << p;
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A valid spec; the malformed cases below replace whole lines of it by number, so the line
// numbers in the comments are the ones the errors must report.
const std::vector<std::string> base_lines = {
    "[op]",                                                                              // 1
    "name = \"toy\"",                                                                    // 2
    "backend = \"cpu\"",                                                                 // 3
    "reference = \"ref.cpp\"",                                                           // 4
    "frozen = [\"extra.h\"]",                                                            // 5
    "",                                                                                  // 6
    "[dims]",                                                                            // 7
    "names = [\"N\", \"D\"]",                                                            // 8
    "",                                                                                  // 9
    "[[shapes]]",                                                                        // 10
    "name = \"small\"",                                                                  // 11
    "dims = { N = 4, D = 8 }",                                                           // 12
    "use = [\"gate\"]",                                                                  // 13
    "",                                                                                  // 14
    "[[shapes]]",                                                                        // 15
    "name = \"big\"",                                                                    // 16
    "dims = { N = 64, D = 128 }",                                                        // 17
    "use = [\"gate\", \"bench\"]",                                                       // 18
    "",                                                                                  // 19
    "[modes.fwd]",                                                                       // 20
    "entry = \"toy_fwd\"",                                                               // 21
    "params = { eps = 1e-6, k = 3 }",                                                    // 22
    "flops = \"2*N*D\"",                                                                 // 23
    "inputs = [",                                                                        // 24
    "  { name = \"x\", dtype = \"f32\", shape = [\"N\", \"D\"], init = \"normal(0, 1)\" },", // 25
    "  { name = \"w\", dtype = \"f32\", shape = [\"D\"] },",                             // 26
    "]",                                                                                 // 27
    "outputs = [",                                                                       // 28
    "  { name = \"y\", dtype = \"f32\", shape = [\"N\", \"D\"], atol = 1e-5, rtol = 1e-5 },", // 29
    "]",                                                                                 // 30
};

std::string make_spec(const std::vector<std::pair<int, std::string>>& replace = {},
                      const std::string& append = "") {
    std::vector<std::string> lines = base_lines;
    for (const auto& [line, text] : replace) lines.at(static_cast<std::size_t>(line - 1)) = text;
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out + append;
}

// An op directory with the files the base spec refers to.
class SpecLoaderTest : public ::testing::Test {
protected:
    void SetUp() override {
        write_file(dir() / "ref.cpp", "// stub reference\n");
        write_file(dir() / "extra.h", "// frozen helper\n");
    }
    [[nodiscard]] const fs::path& dir() const { return m_tmp.get_path(); }
    op_spec load(const std::string& text) {
        write_file(dir() / "op.toml", text);
        return load_op_spec(dir());
    }

private:
    temp_dir m_tmp;
};

}  // namespace

TEST_F(SpecLoaderTest, LoadsTheBaseSpec) {
    const op_spec s = load(make_spec());
    EXPECT_EQ(s.name, "toy");
    EXPECT_EQ(s.backend, kloop::spec::backend_kind::cpu);
    EXPECT_EQ(s.op_dir, dir());
    EXPECT_EQ(s.spec_file, dir() / "op.toml");
    EXPECT_EQ(s.reference, dir() / "ref.cpp");
    EXPECT_EQ(s.frozen, (std::vector<fs::path>{dir() / "op.toml", dir() / "ref.cpp", dir() / "extra.h"}));
    EXPECT_EQ(s.dims, (std::vector<std::string>{"N", "D"}));
    EXPECT_EQ(s.fixed_seeds[0], 1u);
    EXPECT_EQ(s.fixed_seeds[1], 2u);

    ASSERT_EQ(s.shapes.size(), 2u);
    EXPECT_EQ(s.shapes[0].name, "small");
    EXPECT_EQ(s.shapes[0].line, 10);
    EXPECT_TRUE(s.shapes[0].gate);
    EXPECT_FALSE(s.shapes[0].bench);
    EXPECT_EQ(s.shapes[1].dims.at("D"), 128);
    EXPECT_TRUE(s.shapes[1].gate && s.shapes[1].bench);
    EXPECT_EQ(s.get_gate_shapes().size(), 2u);
    ASSERT_EQ(s.get_bench_shapes().size(), 1u);
    EXPECT_EQ(s.get_bench_shapes()[0]->name, "big");

    const auto* fwd = s.find_mode("fwd");
    ASSERT_NE(fwd, nullptr);
    EXPECT_EQ(s.find_mode("bwd"), nullptr);
    EXPECT_EQ(s.find_shape("huge"), nullptr);
    EXPECT_EQ(fwd->entry, "toy_fwd");
    EXPECT_EQ(fwd->reference_entry, "toy_fwd");  // defaults to entry
    EXPECT_EQ(fwd->line, 20);
    ASSERT_EQ(fwd->params.size(), 2u);
    EXPECT_EQ(fwd->params[0].name, "eps");
    EXPECT_FALSE(fwd->params[0].is_integer);
    EXPECT_DOUBLE_EQ(fwd->params[0].value, 1e-6);
    EXPECT_EQ(fwd->params[1].name, "k");
    EXPECT_TRUE(fwd->params[1].is_integer);
    EXPECT_DOUBLE_EQ(fwd->params[1].value, 3.0);
    ASSERT_TRUE(fwd->flops.has_value());
    EXPECT_EQ(fwd->flops->eval(s.shapes[0].dims), 64);
    EXPECT_FALSE(fwd->bytes.has_value());

    ASSERT_EQ(fwd->inputs.size(), 2u);
    EXPECT_EQ(fwd->inputs[1].name, "w");
    EXPECT_EQ(fwd->inputs[1].line, 26);
    EXPECT_EQ(fwd->inputs[1].init.kind, kloop::spec::init_kind::normal);  // default init
    EXPECT_EQ(fwd->inputs[1].init.text, "normal(0, 1)");
    EXPECT_FALSE(fwd->inputs[1].inout);
    ASSERT_EQ(fwd->outputs.size(), 1u);
    const auto& y = fwd->outputs[0];
    EXPECT_EQ(y.shape.size(), 2u);
    EXPECT_EQ(y.tol.atol, 1e-5);
    EXPECT_EQ(y.tol.rtol, 1e-5);
    EXPECT_FALSE(y.tol.rel_rms.has_value());
}

// Refused before it is read, never a hang or an allocation failure: a FIFO with no writer, a
// link to an endless device, a file far larger than any spec.
TEST_F(SpecLoaderTest, AFifoADeviceOrAHugeFileIsRefusedNamingIt) {
    const auto refused = [](const fs::path& p, const std::string& why, const std::string& named = "") {
        try {
            (void)load_op_spec(p);
            ADD_FAILURE() << "loaded " << p;
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), "op.toml");
            EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
            const std::string name = named.empty() ? p.filename().string() : named;
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    };
    const fs::path fifo = dir() / "fifo.toml";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    refused(fifo, "not a regular file");
    const fs::path zero = dir() / "zero.toml";
    fs::create_symlink("/dev/zero", zero);
    refused(zero, "not a regular file", "/dev/zero");  // named as resolved
    const fs::path huge = dir() / "huge.toml";
    { std::ofstream(huge) << std::string(5u << 20, '#'); }
    refused(huge, "larger than 4 MiB");
}

TEST_F(SpecLoaderTest, FileAndDirectoryGiveTheSameSpec) {
    const op_spec a = load(make_spec());
    const op_spec b = load_op_spec(dir() / "op.toml");
    EXPECT_EQ(a.spec_file, b.spec_file);
    EXPECT_EQ(a.op_dir, b.op_dir);
    EXPECT_EQ(a.frozen, b.frozen);
}

TEST_F(SpecLoaderTest, OptionalFields) {
    fs::create_directories(dir() / "include");
    const op_spec s = load(make_spec(
        {{3, "backend = \"cuda\""},
         {5, "frozen = [\"extra.h\", \"ref.cpp\", \"op.toml\"]\nseeds = [11, 12]\n"
             "description = \"a toy\"\n[build]\nflags = [\"-O2\"]\ninclude_dirs = [\"include\"]"},
         {26, "  { name = \"w\", dtype = \"i32\", shape = [\"N+1\"], init = \"cu_seqlens(N*D)\", inout = true },"},
         {29, "  { name = \"y\", dtype = \"bf16\", shape = [], rel_rms = 0 },"}}));
    EXPECT_EQ(s.backend, kloop::spec::backend_kind::cuda);
    EXPECT_EQ(s.description, "a toy");
    EXPECT_EQ(s.fixed_seeds[0], 11u);
    EXPECT_EQ(s.fixed_seeds[1], 12u);
    EXPECT_EQ(s.frozen.size(), 3u);  // listed duplicates of op.toml and the reference collapse
    EXPECT_EQ(s.build.flags, (std::vector<std::string>{"-O2"}));
    ASSERT_EQ(s.build.include_dirs.size(), 1u);
    EXPECT_EQ(s.build.include_dirs[0].path, (dir() / "include").string());
    EXPECT_EQ(s.build.include_dirs[0].python_package, "");
    EXPECT_EQ(s.build.include_dirs[0].field, "build.include_dirs[0]");
    // A directory inside an installed Python package: kept as written, found at build time.
    const op_spec p = load(make_spec({}, "[build]\ninclude_dirs = [\"include\", "
                                         "{ python_package = \"cutlass_library\", path = \"./source/include/\" }, "
                                         "{ python_package = \"cute_pkg\" }]\n"));
    ASSERT_EQ(p.build.include_dirs.size(), 3u);
    EXPECT_EQ(p.build.include_dirs[0].path, (dir() / "include").string());
    EXPECT_EQ(p.build.include_dirs[1].python_package, "cutlass_library");
    EXPECT_EQ(p.build.include_dirs[1].path, "source/include");
    EXPECT_EQ(p.build.include_dirs[1].line, 32);
    EXPECT_EQ(p.build.include_dirs[1].field, "build.include_dirs[1]");
    EXPECT_EQ(p.build.include_dirs[2].python_package, "cute_pkg");
    EXPECT_EQ(p.build.include_dirs[2].path, "");
    EXPECT_TRUE(s.candidate.files.empty());
    // [candidate] files: paths relative to the candidate's directory, normalised; not required to exist here.
    const op_spec c = load(make_spec({}, "[candidate]\nfiles = [\"./tiles.cuh\", \"configs/\", \"a/../b.h\"]\n"));
    EXPECT_EQ(c.candidate.files, (std::vector<std::string>{"tiles.cuh", "configs/", "b.h"}));
    EXPECT_EQ(c.candidate.line, 31);
    const auto& w = s.modes[0].inputs[1];
    EXPECT_TRUE(w.inout);
    EXPECT_EQ(w.type, kloop::dtype::i32);
    EXPECT_EQ(w.init.kind, kloop::spec::init_kind::cu_seqlens);
    const auto& y = s.modes[0].outputs[0];
    EXPECT_TRUE(y.shape.empty());
    EXPECT_EQ(y.tol.rel_rms, 0.0);
    EXPECT_FALSE(y.tol.has_elementwise());
}

TEST_F(SpecLoaderTest, ArrayOfTablesSyntaxAndIntegerShapeEntries) {
    const op_spec s = load(make_spec(
        {{26, R"~(  { name = "w", dtype = "f16", shape = [2, "ceil_div(D, 3)"] },)~"},
         {28, "#"}, {29, "#"}, {30, "#"}},
        "[[modes.fwd.outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"N\", \"D\"]\natol = 0\n"
        "[modes.bwd]\nentry = \"toy_bwd\"\n"
        "outputs = [{ name = \"dx\", dtype = \"f64\", shape = [\"N\"], rtol = 1 }]\n"));
    const auto& w = s.modes[0].inputs[1];
    ASSERT_EQ(w.shape.size(), 2u);
    EXPECT_EQ(w.shape[0].eval({}), 2);
    EXPECT_EQ(w.shape[1].eval(s.shapes[0].dims), 3);
    ASSERT_EQ(s.modes.size(), 2u);
    EXPECT_EQ(s.modes[0].outputs.size(), 1u);
    EXPECT_EQ(s.modes[0].outputs[0].line, 31);
    EXPECT_EQ(s.modes[0].outputs[0].tol.atol, 0.0);
    EXPECT_EQ(s.modes[1].name, "bwd");
    EXPECT_TRUE(s.modes[1].inputs.empty());
    EXPECT_EQ(s.modes[1].outputs[0].type, kloop::dtype::f64);
}

TEST_F(SpecLoaderTest, MissingFileIsASpecErrorWithTheOsReason) {
    try {
        (void)load_op_spec(dir() / "nowhere");
        FAIL() << "no error";
    } catch (const spec_error& e) {
        EXPECT_EQ(e.get_field(), "op.toml");
        EXPECT_EQ(e.get_line(), 0);
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
    }
    // A directory without op.toml.
    try {
        (void)load_op_spec(dir());
        FAIL() << "no error";
    } catch (const spec_error& e) {
        EXPECT_EQ(e.get_file(), (dir() / "op.toml").string());
        EXPECT_EQ(e.get_line(), 0);
    }
}

struct bad_spec {
    const char* what;
    std::vector<std::pair<int, std::string>> replace;
    std::string append;
    std::string field;
    int line;
    std::string message;
};

// Names the case in failure output instead of dumping the struct's bytes.
void PrintTo(const bad_spec& c, std::ostream* os) { *os << c.what; }

class MalformedSpecTest : public SpecLoaderTest, public ::testing::WithParamInterface<bad_spec> {};

TEST_P(MalformedSpecTest, ReportsFieldLineAndReason) {
    const bad_spec& c = GetParam();
    try {
        (void)load(make_spec(c.replace, c.append));
        FAIL() << c.what << ": accepted";
    } catch (const spec_error& e) {
        RecordProperty("message", e.what());  // visible with --gtest_output=xml
        EXPECT_EQ(e.get_field(), c.field) << c.what << ": " << e.what();
        EXPECT_EQ(e.get_line(), c.line) << c.what << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
            << c.what << ": '" << e.what() << "' lacks '" << c.message << "'";
        EXPECT_EQ(e.get_file(), (dir() / "op.toml").string());
    }
}

TEST_F(SpecLoaderTest, FrozenFilesAndTheReferenceAreResolvedThroughLinks) {
    // A link inside the op directory to a file outside it is the file outside it.
    fs::create_symlink("/etc/passwd", dir() / "passwd_link");
    for (const auto& [line, text, field] :
         {std::tuple{5, std::string(R"~(frozen = ["passwd_link"])~"), std::string("op.frozen[0]")},
          std::tuple{4, std::string(R"~(reference = "passwd_link")~"), std::string("op.reference")}}) {
        try {
            (void)load(make_spec({{line, text}}));
            ADD_FAILURE() << text << ": accepted";
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), field) << e.what();
            EXPECT_EQ(e.get_line(), line) << e.what();
            EXPECT_NE(std::string(e.what()).find("outside the op directory"), std::string::npos) << e.what();
            EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        }
    }
    // A link that stays inside is the file it names.
    fs::create_symlink(dir() / "extra.h", dir() / "extra_link.h");
    const op_spec s = load(make_spec({{5, R"~(frozen = ["extra_link.h"])~"}}));
    EXPECT_EQ(s.frozen.back(), dir() / "extra.h");
}

// clang-format off
const bad_spec bad_specs[] = {
    {"unknown field with suggestion",
     {{29, R"~(  { name = "y", dtype = "f32", shape = ["N", "D"], atoll = 1e-5 },)~"}}, "",
     "modes.fwd.outputs[0].atoll", 29, "unknown field 'atoll' in modes.fwd.outputs[0]; did you mean 'atol'?"},
    {"unknown field without a near miss lists the allowed ones",
     {{29, R"~(  { name = "y", dtype = "f32", shape = ["N", "D"], init = "normal(0, 1)", atol = 1 },)~"}}, "",
     "modes.fwd.outputs[0].init", 29, "expected one of: name, dtype, shape, atol, rtol, rel_rms"},
    {"tolerance on an input",
     {{26, R"~(  { name = "w", dtype = "f32", shape = ["D"], atol = 1e-3 },)~"}}, "",
     "modes.fwd.inputs[1].atol", 26, "unknown field 'atol' in modes.fwd.inputs[1]"},
    {"unknown field in [op]",
     {{3, R"~(descripton = "x")~"}}, "",
     "op.descripton", 3, "did you mean 'description'?"},
    {"unknown top-level table",
     {}, "[mode.bwd]\nentry = \"b\"\n",
     "mode", 31, "unknown field 'mode' at top level; did you mean 'modes'?"},
    {"missing entry",
     {{21, R"~(reference_entry = "toy_ref")~"}}, "",
     "modes.fwd.entry", 20, "missing required field 'entry'"},
    {"entry not a C identifier",
     {{21, R"~(entry = "toy-fwd")~"}}, "",
     "modes.fwd.entry", 21, "not a C identifier"},
    {"bad dtype",
     {{26, R"~(  { name = "w", dtype = "f23", shape = ["D"] },)~"}}, "",
     "modes.fwd.inputs[1].dtype", 26, "unknown dtype 'f23'"},
    {"bad init arity",
     {{25, R"~(  { name = "x", dtype = "f32", shape = ["N", "D"], init = "normal(0)" },)~"}}, "",
     "modes.fwd.inputs[0].init", 25, "normal(mean, std) takes 2 arguments, got 1"},
    {"unknown init function",
     {{25, R"~(  { name = "x", dtype = "f32", shape = ["N", "D"], init = "gauss(0, 1)" },)~"}}, "",
     "modes.fwd.inputs[0].init", 25, "unknown init function 'gauss'"},
    {"cu_seqlens on a float tensor",
     {{26, R"~(  { name = "w", dtype = "f32", shape = ["N+1"], init = "cu_seqlens(D)" },)~"}}, "",
     "modes.fwd.inputs[1].init", 26, "cu_seqlens needs an integer dtype"},
    {"cu_seqlens on a 2-d tensor",
     {{26, R"~(  { name = "w", dtype = "i64", shape = ["N", "D"], init = "cu_seqlens(D)" },)~"}}, "",
     "modes.fwd.inputs[1].init", 26, "cu_seqlens needs a 1-d shape"},
    {"cu_seqlens total smaller than the number of sequences",
     {{26, R"~(  { name = "w", dtype = "i32", shape = ["N+1"], init = "cu_seqlens(N-1)" },)~"}}, "",
     "modes.fwd.inputs[1].init", 26, "in shape 'small' (line 10): total 3 is smaller than the number of sequences 4"},
    {"undeclared dim in a tensor shape",
     {{26, R"~(  { name = "w", dtype = "f32", shape = ["K"] },)~"}}, "",
     "modes.fwd.inputs[1].shape[0]", 26, "undeclared dim 'K' in 'K'; declared dims: N, D"},
    {"undeclared dim in flops",
     {{23, R"~(flops = "2*N*d")~"}}, "",
     "modes.fwd.flops", 23, "undeclared dim 'd' in '2*N*d' (did you mean 'D'?)"},
    {"malformed flops expression",
     {{23, R"~(flops = "2*N*")~"}}, "",
     "modes.fwd.flops", 23, "dim expression '2*N*'"},
    {"duplicate shape name",
     {{16, R"~(name = "small")~"}}, "",
     "shapes[1].name", 16, "duplicate shape name 'small' (first defined at line 10)"},
    {"shape missing a dim",
     {{12, R"~(dims = { N = 4 })~"}}, "",
     "shapes[0].dims.D", 12, "shape 'small' does not give dim 'D'"},
    {"undeclared dim in a shape",
     {{12, R"~(dims = { N = 4, D = 8, M = 2 })~"}}, "",
     "shapes[0].dims.M", 12, "undeclared dim 'M'"},
    {"zero dim value",
     {{12, R"~(dims = { N = 0, D = 8 })~"}}, "",
     "shapes[0].dims.N", 12, "must be a positive integer, got 0"},
    {"float dim value",
     {{17, R"~(dims = { N = 64.0, D = 128 })~"}}, "",
     "shapes[1].dims.N", 17, "must be a positive integer, got a float"},
    {"bad use",
     {{18, R"~(use = ["gate", "banch"])~"}}, "",
     "shapes[1].use[1]", 18, "unknown use 'banch' (did you mean 'bench'?)"},
    {"empty use",
     {{13, R"~(use = [])~"}}, "",
     "shapes[0].use", 13, "must not be empty"},
    {"no gate shape",
     {{13, R"~(use = ["bench"])~"}, {18, R"~(use = ["bench"])~"}}, "",
     "shapes", 10, "no shape is marked for the gate"},
    {"non-positive size in one shape",
     {{26, R"~(  { name = "w", dtype = "f32", shape = ["D-8"] },)~"}}, "",
     "modes.fwd.inputs[1].shape[0]", 26, "tensor 'w' in shape 'small' (line 10): dimension 0 'D-8' evaluates to 0"},
    {"byte size overflow",
     {{17, R"~(dims = { N = 4611686018427387904, D = 128 })~"}}, "",
     "modes.fwd.inputs[0].shape", 25, "tensor 'x' in shape 'big' (line 15): its size in bytes overflows int64"},
    {"output without tolerance",
     {{29, R"~(  { name = "y", dtype = "f32", shape = ["N", "D"] },)~"}}, "",
     "modes.fwd.outputs[0]", 29, "output 'y' has no tolerance"},
    {"negative atol",
     {{29, R"~(  { name = "y", dtype = "f32", shape = ["N", "D"], atol = -1e-5 },)~"}}, "",
     "modes.fwd.outputs[0].atol", 29, "must be >= 0, got -1e-05"},
    {"tolerance given as a string",
     {{29, R"~(  { name = "y", dtype = "f32", shape = ["N", "D"], rtol = "1e-5" },)~"}}, "",
     "modes.fwd.outputs[0].rtol", 29, "must be a number, got a string"},
    {"duplicate tensor name across inputs and outputs",
     {{29, R"~(  { name = "x", dtype = "f32", shape = ["N", "D"], atol = 1e-5 },)~"}}, "",
     "modes.fwd.outputs[0].name", 29, "duplicate tensor name 'x' in mode 'fwd' (first at line 25"},
    {"no outputs",
     {{28, "#"}, {29, "#"}, {30, "#"}}, "",
     "modes.fwd.outputs", 20, "missing required field 'outputs'"},
    {"param of the wrong type",
     {{22, R"~(params = { eps = true })~"}}, "",
     "modes.fwd.params.eps", 22, "must be a number, got a boolean"},
    {"syntax error",
     {{22, R"~(params = { eps = })~"}}, "",
     "<syntax>", 22, "expected value"},
    {"missing reference file",
     {{4, R"~(reference = "nope.cpp")~"}}, "",
     "op.reference", 4, "'nope.cpp' does not exist"},
    {"absolute reference path",
     {{4, R"~(reference = "/etc/hostname")~"}}, "",
     "op.reference", 4, "must be a path relative to the op directory"},
    {"missing frozen file",
     {{5, R"~(frozen = ["extra.h", "gone.h"])~"}}, "",
     "op.frozen[1]", 5, "'gone.h' does not exist"},
    {"frozen file outside the op directory",
     {{5, R"~(frozen = ["extra.h", "../../../../../../../../etc/passwd"])~"}}, "",
     "op.frozen[1]", 5, "outside the op directory"},
    {"reference outside the op directory",
     {{4, R"~(reference = "../../../../../../../../etc/passwd")~"}}, "",
     "op.reference", 4, "outside the op directory"},
    {"missing op name",
     {{2, "# no name"}}, "",
     "op.name", 1, "missing required field 'name'"},
    {"bad op name",
     {{2, R"~(name = "toy op")~"}}, "",
     "op.name", 2, "may only contain letters, digits"},
    {"bad backend",
     {{3, R"~(backend = "cuda12")~"}}, "",
     "op.backend", 3, "unknown backend 'cuda12'"},
    {"equal seeds",
     {{3, R"~(seeds = [7, 7])~"}}, "",
     "op.seeds", 3, "the two seeds must differ"},
    {"three seeds",
     {{3, R"~(seeds = [1, 2, 3])~"}}, "",
     "op.seeds", 3, "exactly 2 seeds"},
    {"missing [dims]",
     {{7, "#"}, {8, "#"}}, "",
     "dims", 0, "missing required table [dims]"},
    {"duplicate dim",
     {{8, R"~(names = ["N", "D", "N"])~"}}, "",
     "dims.names[2]", 8, "dim 'N' is declared twice"},
    {"shapes as a single table",
     {{10, "[shapes]"}, {15, "#"}, {16, "#"}, {17, "#"}, {18, "#"}}, "",
     "shapes", 10, "must be an array of tables"},
    {"inout not a boolean",
     {{26, R"~(  { name = "w", dtype = "f32", shape = ["D"], inout = "yes" },)~"}}, "",
     "modes.fwd.inputs[1].inout", 26, "must be true or false, got a string"},
    {"a candidate file outside the candidate's directory",
     {}, "[candidate]\nfiles = [\"tiles.cuh\", \"sub/../../common.cuh\"]\n",
     "candidate.files[1]", 32, "'sub/../../common.cuh' must be a file or directory inside the candidate's directory"},
    {"an absolute candidate file",
     {}, "[candidate]\nfiles = [\"/usr/include/x.h\"]\n",
     "candidate.files[0]", 32, "no absolute path"},
    {"the candidate's directory itself",
     {}, "[candidate]\nfiles = [\"./\"]\n",
     "candidate.files[0]", 32, "not the directory itself"},
    {"a misspelt [candidate] field",
     {}, "[candidate]\nfile = [\"x.h\"]\n",
     "candidate.file", 32, "did you mean 'files'?"},
    {"an include dir that is neither a string nor a table",
     {}, "[build]\ninclude_dirs = [3]\n",
     "build.include_dirs[0]", 32, "must be a directory (a string relative to the op directory) or a table"},
    {"a package include dir without its package",
     {}, "[build]\ninclude_dirs = [{ path = \"include\" }]\n",
     "build.include_dirs[0].python_package", 32, "missing required field 'python_package'"},
    {"a dotted package name",
     {}, "[build]\ninclude_dirs = [{ python_package = \"cutlass.library\" }]\n",
     "build.include_dirs[0].python_package", 32, "'cutlass.library' is not a top-level package name"},
    {"a package include dir leaving the package",
     {}, "[build]\ninclude_dirs = [{ python_package = \"cutlass_library\", path = \"source/../../x\" }]\n",
     "build.include_dirs[0].path", 32, "must be a path inside the package's directory"},
    {"an absolute path inside a package",
     {}, "[build]\ninclude_dirs = [{ python_package = \"cutlass_library\", path = \"/usr/include\" }]\n",
     "build.include_dirs[0].path", 32, "must be a path inside the package's directory"},
    {"a misspelt package include field",
     {}, "[build]\ninclude_dirs = [{ package = \"cutlass_library\" }]\n",
     "build.include_dirs[0].package", 32, "unknown field"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Cases, MalformedSpecTest, ::testing::ValuesIn(bad_specs),
                         [](const ::testing::TestParamInfo<bad_spec>& param_info) {
                             std::string name;
                             for (const char* p = param_info.param.what; *p; ++p)
                                 name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return name;
                         });

TEST_F(SpecLoaderTest, ErrorMessageNamesFileLineAndField) {
    try {
        (void)load(make_spec({{16, R"~(name = "small")~"}}));
        FAIL() << "no error";
    } catch (const spec_error& e) {
        const std::string expected = (dir() / "op.toml").string() + ":16: field 'shapes[1].name': ";
        EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
    }
}

// ---- the bundled example ----------------------------------------------------------------

namespace {

const fs::path example_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "examples" / "rmsnorm";

void expect_rmsnorm(const op_spec& s) {
    EXPECT_EQ(s.name, "rmsnorm");
    EXPECT_EQ(s.backend, kloop::spec::backend_kind::cpu);
    EXPECT_EQ(s.dims, (std::vector<std::string>{"N", "D"}));
    EXPECT_EQ(s.build.flags, (std::vector<std::string>{"-O3", "-march=native"}));
    ASSERT_EQ(s.shapes.size(), 4u);
    EXPECT_EQ(s.shapes[0].name, "n256_d1024");
    EXPECT_TRUE(s.shapes[0].gate);
    EXPECT_FALSE(s.shapes[0].bench);
    EXPECT_EQ(s.shapes[1].name, "n1000_d777");
    EXPECT_EQ(s.shapes[1].dims.at("D"), 777);
    EXPECT_TRUE(s.shapes[1].gate && s.shapes[1].bench);
    EXPECT_FALSE(s.shapes[3].gate);
    EXPECT_TRUE(s.shapes[3].bench);
    EXPECT_EQ(s.get_gate_shapes().size(), 3u);
    EXPECT_EQ(s.get_bench_shapes().size(), 3u);

    ASSERT_EQ(s.modes.size(), 2u);
    EXPECT_EQ(s.modes[0].name, "fwd");  // file order, not toml++'s alphabetical order
    EXPECT_EQ(s.modes[1].name, "bwd");

    const auto& fwd = s.modes[0];
    EXPECT_EQ(fwd.entry, "rmsnorm_fwd");
    EXPECT_EQ(fwd.reference_entry, "rmsnorm_fwd_ref");
    ASSERT_EQ(fwd.params.size(), 1u);
    EXPECT_EQ(fwd.params[0].name, "eps");
    EXPECT_DOUBLE_EQ(fwd.params[0].value, 1e-6);
    EXPECT_FALSE(fwd.params[0].is_integer);
    ASSERT_TRUE(fwd.flops && fwd.bytes);
    EXPECT_EQ(fwd.flops->eval(s.shapes[0].dims), 4 * 256 * 1024);
    EXPECT_EQ(fwd.bytes->eval(s.shapes[0].dims), 4 * (2 * 256 * 1024 + 1024 + 256));
    ASSERT_EQ(fwd.inputs.size(), 2u);
    EXPECT_EQ(fwd.inputs[1].name, "w");
    EXPECT_EQ(fwd.inputs[1].init.kind, kloop::spec::init_kind::uniform);
    EXPECT_DOUBLE_EQ(fwd.inputs[1].init.a, 0.5);
    EXPECT_DOUBLE_EQ(fwd.inputs[1].init.b, 1.5);
    ASSERT_EQ(fwd.outputs.size(), 2u);
    EXPECT_EQ(fwd.outputs[0].name, "y");
    EXPECT_EQ(fwd.outputs[0].tol.atol, 1e-5);
    EXPECT_EQ(fwd.outputs[0].tol.rtol, 1e-5);
    EXPECT_EQ(fwd.outputs[1].name, "rstd");
    EXPECT_EQ(fwd.outputs[1].tol.atol, 1e-6);
    ASSERT_EQ(fwd.outputs[1].shape.size(), 1u);
    EXPECT_EQ(fwd.outputs[1].shape[0].get_text(), "N");

    const auto& bwd = s.modes[1];
    EXPECT_TRUE(bwd.params.empty());
    ASSERT_EQ(bwd.inputs.size(), 4u);
    EXPECT_EQ(bwd.inputs[3].name, "dy");
    ASSERT_EQ(bwd.outputs.size(), 2u);
    EXPECT_EQ(bwd.outputs[0].tol.atol, 1e-4);
    EXPECT_EQ(bwd.outputs[1].name, "dw");
    EXPECT_EQ(bwd.outputs[1].tol.rel_rms, 1e-4);
    EXPECT_FALSE(bwd.outputs[1].tol.has_elementwise());
    EXPECT_EQ(s.fixed_seeds[0], 1u);
    EXPECT_EQ(s.fixed_seeds[1], 2u);
}

}  // namespace

// The real op.toml, parsed against a directory holding stubs of the files it names, so the
// test does not depend on the example's reference being present.
TEST_F(SpecLoaderTest, ParsesTheRmsnormExample) {
    const std::string text = read_file(example_dir / "op.toml");
    ASSERT_FALSE(text.empty()) << "cannot read " << example_dir / "op.toml";
    write_file(dir() / "op.toml", text);
    write_file(dir() / "reference.cpp", "// stub\n");
    const op_spec s = parse_op_spec(text, dir() / "op.toml", dir());
    expect_rmsnorm(s);
    EXPECT_EQ(s.reference, dir() / "reference.cpp");
    EXPECT_EQ(s.frozen, (std::vector<fs::path>{dir() / "op.toml", dir() / "reference.cpp"}));
}

TEST(SpecLoaderExampleTest, LoadsTheRmsnormDirectory) {
    if (!fs::exists(example_dir / "reference.cpp"))
        GTEST_SKIP() << "examples/rmsnorm/reference.cpp is not there yet";
    const op_spec s = load_op_spec(example_dir);
    expect_rmsnorm(s);
    EXPECT_EQ(s.reference, fs::weakly_canonical(example_dir / "reference.cpp"));
}

// Non-ASCII text is TOML only in strings and comments; elsewhere (and a quote where no string can
// start) it is refused on its line before toml++ runs, whose 3.3 release reaches
// __builtin_unreachable on `x = ö` (fuzz/corpus/spec_loader/regression_*).
TEST_F(SpecLoaderTest, NonAsciiOutsideStringsIsASyntaxErrorOnItsLine) {
    const auto syntax_error_at = [&](const std::string& text, int line) {
        try {
            (void)load(text);
            ADD_FAILURE() << "loaded:\n" << text;
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), "<syntax>") << e.what();
            EXPECT_EQ(e.get_line(), line) << e.what();
        }
    };
    syntax_error_at(make_spec({{22, "params = { eps = \xc3\xb6 }"}}), 22);      // x = ö
    syntax_error_at(make_spec({{8, "n\xc3\xa4mes = [\"N\", \"D\"]"}}), 8);      // a non-ASCII key
    syntax_error_at(make_spec({{23, "flops = 0\"\x14\xcc\x85\""}}), 23);       // a quote after a value
    syntax_error_at(make_spec({{23, "flops = 0:i.'\xc6\xbc'"}}), 23);             // after a `.` in a value
    syntax_error_at(make_spec({{23, "flops = 'x\xc6\xbc"}}), 23);                 // an unterminated string
    syntax_error_at(make_spec({{12, "dims = { N = -0Lpp['\xef\xbb\xbb'] }"}}), 12); // `[` after a bare value
    syntax_error_at(make_spec({{12, "dims = { N = 4!, D = 8 }"}}), 12);            // not a TOML character
    syntax_error_at(make_spec({{23, "flops =422=\"\xef\xbb\xbc\""}}), 23);        // `=` in a value
    syntax_error_at(make_spec({{23, "flops = \"2*N*D\", \"x\""}}), 23);          // a comma outside brackets
    syntax_error_at(make_spec({{23, "flops = \"2*N*D\" }"}}), 23);                 // closes nothing
    syntax_error_at(make_spec({{23, "flops = \"\\\xef\xb3\xbf\""}}), 23);          // `\` before a non-ASCII character
    // A line-ending backslash, then blanks and a line break, then a non-ASCII character.
    syntax_error_at(make_spec({{6, "description = \"\"\"a \\  "}, {7, " \xef\xbb\x80" "b\"\"\"\n[dims]"}}), 6);
    // A quote after `.` opens a string in a key (a table header's here), and a quote after `,` in
    // an inline table opens a key.
    const auto keys = load(make_spec({{20, "[modes.'fwd']"}, {22, "params = { eps = 1e-6, 'k' = 3 }"}}));
    ASSERT_NE(keys.find_mode("fwd"), nullptr);
    EXPECT_EQ(keys.find_mode("fwd")->params.size(), 2u);
    // In strings and comments, with escaped quotes and multi-line strings, it is text like any.
    const auto ok = load(make_spec({{6, "description = \"toy \\\" \xc2\xb5s\"  # \xc3\xb6 \" \xe2\x80\x94"},
                                    {9, "# \xc3\xa9t\xc3\xa9 '"}}));
    EXPECT_EQ(ok.description, "toy \" \xc2\xb5s");
    const auto multi = load(make_spec({{6, "description = '''multi \xc3\xb6"}, {7, "line''' # \"\n[dims]"}}));
    EXPECT_EQ(multi.description, "multi \xc3\xb6\nline");
    const auto joined = load(make_spec({{6, "description = \"\"\"a \\"}, {7, "  b \xc3\xb6\"\"\"\n[dims]"}}));
    EXPECT_EQ(joined.description, "a b \xc3\xb6");  // a line-ending backslash before ASCII text
}

// The native FLA examples: four modes (dense and varlen, fwd and bwd), FLA's registry shapes, and
// the share of PyTorch glue kernels their v0 (FLA's wrappers) needs; a share out of [0, 0.5] is
// refused naming the field.
TEST(SpecLoaderExampleTest, LoadsTheFlaExamplesAndTheirAtenGlueShare) {
    for (const char* name : {"fla-chunk-simple-gla", "fla-chunk-gla"}) {
        const fs::path d = fs::path(KLOOP_TEST_SOURCE_DIR) / "examples" / name;
        const op_spec s = load_op_spec(d);
        EXPECT_DOUBLE_EQ(s.python.aten_glue_share, 0.15) << name;
        ASSERT_TRUE(s.python.min_timeout_s.has_value()) << name;  // FLA's autotuning needs minutes cold
        EXPECT_DOUBLE_EQ(s.runner_timeout_s(120), *s.python.min_timeout_s) << name;
        EXPECT_DOUBLE_EQ(s.runner_timeout_s(1e5), 1e5) << name;  // a longer --timeout wins
        ASSERT_EQ(s.modes.size(), 4u) << name;
        EXPECT_EQ(s.modes[2].name, "fwd_varlen") << name;
        int bench = 0;
        for (const auto& sh : s.shapes) bench += sh.bench ? 1 : 0;
        EXPECT_EQ(bench, 5) << name;
        // Its CUDA versions are native candidates of the Python op, built for sm_90a.
        if (std::string(name) == "fla-chunk-simple-gla") EXPECT_EQ(s.build.arch_suffix, "a");

        temp_dir t;
        fs::copy(d / "ref.py", t.get_path() / "ref.py");
        std::string text = read_file(d / "op.toml");
        const std::string from = "aten_glue_share = 0.15";
        text.replace(text.find(from), from.size(), "aten_glue_share = 0.9");
        write_file(t.get_path() / "op.toml", text);
        try {
            (void)load_op_spec(t.get_path());
            ADD_FAILURE() << name << ": a share of 0.9 was accepted";
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), "python.aten_glue_share") << e.what();
            EXPECT_NE(std::string(e.what()).find("[0, 0.5]"), std::string::npos) << e.what();
        }
        text = read_file(d / "op.toml");
        const auto at = text.find("min_timeout = ");
        ASSERT_NE(at, std::string::npos) << name;
        text.replace(at, text.find('\n', at) - at, "min_timeout = 0");
        write_file(t.get_path() / "op.toml", text);
        try {
            (void)load_op_spec(t.get_path());
            ADD_FAILURE() << name << ": a min_timeout of 0 was accepted";
        } catch (const spec_error& e) {
            EXPECT_EQ(e.get_field(), "python.min_timeout") << e.what();
        }
    }
    // Without it, --timeout is the limit.
    const op_spec plain = load_op_spec(fs::path(KLOOP_TEST_SOURCE_DIR) / "examples" / "rmsnorm-triton");
    EXPECT_DOUBLE_EQ(plain.runner_timeout_s(120), 120);
}
