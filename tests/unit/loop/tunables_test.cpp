// Unit under test: loop/tunables — reading `kloop:tune` declarations from a candidate's source
// and writing the variant with chosen values (every other byte unchanged).
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "loop/tunables.hpp"

using namespace kloop::loop;

namespace {

// The usage error's message for `text` as `file`; "" when it parses.
std::string error_of(const std::string& text, const std::string& file) {
    try {
        (void)parse_tunables(text, file);
    } catch (const kloop::usage_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(TunablesTest, ReadsEveryCppDeclarationForm) {
    const std::string text =
        "#include <x.h>\n"
        "#define BLOCK 256 // kloop:tune 128 256 512\n"
        "  #  define UNROLL 4   //kloop:tune 2, 4, 8\n"
        "constexpr int kThreads = 256; // kloop:tune 256 512 1024\n"
        "static constexpr std::size_t kRows = 4u;  // kloop:tune 2u 4u\n"
        "const float kScale = 0.5f; // kloop:tune 0.25f 0.5f\n"
        "inline constexpr bool kFast = true; // kloop:tune true false\n"
        "int not_a_tunable = 3; // a comment mentioning kloop:tune in prose is no marker\n";
    const auto t = parse_tunables(text, "kernel.cu");
    ASSERT_EQ(t.size(), 6u);
    EXPECT_EQ(t[0].name, "BLOCK");
    EXPECT_EQ(t[0].value, "256");
    EXPECT_EQ(t[0].values, (std::vector<std::string>{"128", "256", "512"}));
    EXPECT_EQ(t[0].line, 2);
    EXPECT_EQ(t[1].name, "UNROLL");
    EXPECT_EQ(t[1].values, (std::vector<std::string>{"2", "4", "8"}));
    EXPECT_EQ(t[2].name, "kThreads");
    EXPECT_EQ(t[2].line, 4);
    EXPECT_EQ(t[3].name, "kRows");
    EXPECT_EQ(t[3].value, "4u");
    EXPECT_EQ(t[4].name, "kScale");
    EXPECT_EQ(t[4].value, "0.5f");
    EXPECT_EQ(t[5].name, "kFast");
    EXPECT_EQ(declared_config(t), (tune_config{"256", "4", "256", "4u", "0.5f", "true"}));
}

TEST(TunablesTest, ReadsPythonModuleLevelAssignments) {
    const std::string text = "import triton\n"
                             "BLOCK = 1024  # kloop:tune 512 1024 2048\n"
                             "NUM_WARPS: int = 4 # kloop:tune 2 4 8\n"
                             "# BLOCK = 1 // kloop:tune 1 2  (a C marker in Python is prose)\n"
                             "def f():\n    return BLOCK\n";
    const auto t = parse_tunables(text, "kernel.py");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].name, "BLOCK");
    EXPECT_EQ(t[0].value, "1024");
    EXPECT_EQ(t[1].name, "NUM_WARPS");
    EXPECT_EQ(t[1].value, "4");
    EXPECT_EQ(t[1].line, 3);
}

TEST(TunablesTest, VariantChangesOnlyTheValues) {
    const std::string text = "// head\r\n#define BLOCK 256 // kloop:tune 128 256\r\nconstexpr int kW = 8; // kloop:tune 4 8 16\n"
                             "int main() { return BLOCK + kW; }\n";
    const auto t = parse_tunables(text, "k.cpp");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(write_variant(text, t, declared_config(t)), text);
    const auto v = write_variant(text, t, {"128", "16"});
    EXPECT_EQ(v, "// head\r\n#define BLOCK 128 // kloop:tune 128 256\r\nconstexpr int kW = 16; // kloop:tune 4 8 16\n"
                 "int main() { return BLOCK + kW; }\n");
    // The variant declares the same tunables, now at the chosen values.
    EXPECT_EQ(declared_config(parse_tunables(v, "k.cpp")), (tune_config{"128", "16"}));
    EXPECT_EQ(describe_config(t, {"128", "16"}), "BLOCK=128, kW=16");
    EXPECT_EQ(config_json(t, {"128", "16"}), R"({"BLOCK":"128","kW":"16"})");
}

TEST(TunablesTest, NoMarkersIsAnEmptyList) {
    EXPECT_TRUE(parse_tunables("int x = 1;\n// kloop:tuned elsewhere\n", "k.cpp").empty());
}

TEST(TunablesTest, MalformedMarkersNameTheFileAndLine) {
    auto m = error_of("int a;\n#define BLOCK 256 // kloop:tune\n", "dir/k.cu");
    EXPECT_NE(m.find("dir/k.cu:2"), std::string::npos) << m;
    EXPECT_NE(m.find("lists no values"), std::string::npos) << m;

    m = error_of("#define BLOCK 256 // kloop:tune 128 256 threads\n", "k.cu");
    EXPECT_NE(m.find("k.cu:1"), std::string::npos) << m;
    EXPECT_NE(m.find("'threads'"), std::string::npos) << m;

    m = error_of("#define BLOCK 256 // kloop:tune 256 128 256\n", "k.cu");
    EXPECT_NE(m.find("lists 256 twice"), std::string::npos) << m;

    m = error_of("#define BLOCK 256 // kloop:tune 128 512\n", "k.cu");
    EXPECT_NE(m.find("not in its kloop:tune set"), std::string::npos) << m;
}

TEST(TunablesTest, DuplicateNamesAreRefused) {
    const auto m = error_of("#define BLOCK 256 // kloop:tune 128 256\n\nconstexpr int BLOCK = 4; // kloop:tune 4 8\n",
                            "k.cpp");
    EXPECT_NE(m.find("k.cpp:3"), std::string::npos) << m;
    EXPECT_NE(m.find("BLOCK is already declared on line 1"), std::string::npos) << m;
}

TEST(TunablesTest, AMarkerOnALineThatDeclaresNothingIsRefused) {
    // A comment-only line, a non-const variable, a function call, an indented Python line.
    for (const auto& [text, file] : std::vector<std::pair<std::string, std::string>>{
             {"// kloop:tune 1 2\n", "k.cpp"},
             {"int kW = 8; // kloop:tune 4 8\n", "k.cpp"},
             {"launch(256); // kloop:tune 128 256\n", "k.cu"},
             {"#define BLOCK // kloop:tune 1 2\n", "k.cu"},
             {"def f():\n    BLOCK = 4  # kloop:tune 4 8\n", "k.py"},
             {"f(BLOCK=4)  # kloop:tune 4 8\n", "k.py"}}) {
        const auto m = error_of(text, file);
        EXPECT_NE(m.find(file + ":"), std::string::npos) << text << " → " << m;
        EXPECT_TRUE(m.find("declares nothing") != std::string::npos || m.find("indented") != std::string::npos)
            << text << " → " << m;
    }
}
