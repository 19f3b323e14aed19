// kloop spec: parsing of `init` strings into initializer values.
#include "spec/initializer.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "spec/spellcheck.hpp"

namespace kloop::spec {

namespace {

struct form {
    init_kind kind;
    const char* name;
    const char* signature;  // as shown in messages
    std::size_t arity;
};

constexpr form forms[] = {
    {init_kind::normal, "normal", "normal(mean, std)", 2},
    {init_kind::uniform, "uniform", "uniform(lo, hi)", 2},
    {init_kind::randint, "randint", "randint(lo, hi)", 2},
    {init_kind::constant, "const", "const(v)", 1},
    {init_kind::logsigmoid_normal, "logsigmoid_normal", "logsigmoid_normal(mean, std)", 2},
    {init_kind::cu_seqlens, "cu_seqlens", "cu_seqlens(total)", 1},
    {init_kind::arange, "arange", "arange(start, step)", 2},
    {init_kind::spike, "spike", "spike(std, peak, row)", 3},
    {init_kind::int_edges, "int_edges", "int_edges(lo, hi)", 2},
};

std::vector<std::string> form_names() {
    std::vector<std::string> names;
    for (const form& f : forms) names.emplace_back(f.name);
    return names;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return std::string(s);
}

[[noreturn]] void fail(const std::string& text, const std::string& why) {
    throw std::invalid_argument("init '" + text + "': " + why);
}

// Splits "a, f(b, c), d" at the commas outside parentheses.
std::vector<std::string> split_args(const std::string& text, std::string_view inner) {
    std::vector<std::string> args;
    if (trim(inner).empty()) return args;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < inner.size(); ++i) {
        const char c = inner[i];
        if (c == '(') ++depth;
        if (c == ')') {
            if (--depth < 0) fail(text, "unbalanced ')'");
        }
        if (c == ',' && depth == 0) {
            args.push_back(trim(inner.substr(start, i - start)));
            start = i + 1;
        }
    }
    if (depth != 0) fail(text, "unbalanced '('");
    args.push_back(trim(inner.substr(start)));
    return args;
}

double parse_number(const std::string& text, const form& f, const std::string& arg) {
    std::string_view s = arg;
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
    double v = 0.0;
    const char* first = s.data();
    const char* last = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
    if (s.empty() || ec != std::errc() || ptr != last)
        fail(text, std::string(f.signature) + ": '" + arg + "' is not a number");
    if (!std::isfinite(v))
        fail(text, std::string(f.signature) + ": '" + arg + "' is not a finite number");
    return v;
}

double parse_integer_valued(const std::string& text, const form& f, const std::string& arg) {
    const double v = parse_number(text, f, arg);
    constexpr double limit = 9007199254740992.0;  // 2^53: every integer up to it is exact
    if (v != std::floor(v) || std::fabs(v) > limit)
        fail(text, std::string(f.signature) + ": '" + arg + "' must be an integer (|v| <= 2^53)");
    return v;
}

}  // namespace

initializer initializer::parse(const std::string& text) {
    const std::string t = trim(text);
    std::size_t i = 0;
    while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
    const std::string name = t.substr(0, i);
    if (name.empty())
        fail(text, "expected a form such as normal(0, 1); known forms: normal, uniform, randint, "
                   "const, logsigmoid_normal, cu_seqlens, arange, spike, int_edges");
    const form* f = nullptr;
    for (const form& candidate : forms)
        if (name == candidate.name) f = &candidate;
    if (f == nullptr)
        fail(text, "unknown init function '" + name + "'" + did_you_mean(name, form_names()) +
                       "; known forms: normal(mean, std), uniform(lo, hi), randint(lo, hi), "
                       "const(v), logsigmoid_normal(mean, std), cu_seqlens(total), "
                       "arange(start, step), spike(std, peak, row), int_edges(lo, hi)");
    std::size_t j = i;
    while (j < t.size() && is_space(t[j])) ++j;
    if (j == t.size() || t[j] != '(')
        fail(text, std::string("expected '(' after '") + f->name + "': the form is " + f->signature);
    if (t.back() != ')') fail(text, std::string("expected ')' at the end: the form is ") + f->signature);
    const std::string_view inner = std::string_view(t).substr(j + 1, t.size() - j - 2);
    const std::vector<std::string> args = split_args(text, inner);
    if (args.size() != f->arity)
        fail(text, std::string(f->signature) + " takes " + std::to_string(f->arity) + " argument" +
                       (f->arity == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
    for (std::size_t k = 0; k < args.size(); ++k)
        if (args[k].empty())
            fail(text, std::string(f->signature) + ": argument " + std::to_string(k + 1) +
                           " is empty");

    initializer init;
    init.kind = f->kind;
    init.text = t;
    switch (f->kind) {
        case init_kind::normal:
        case init_kind::logsigmoid_normal:
            init.a = parse_number(text, *f, args[0]);
            init.b = parse_number(text, *f, args[1]);
            if (!(init.b > 0.0))
                fail(text, std::string(f->signature) + ": std must be > 0, got " + args[1]);
            break;
        case init_kind::uniform:
            init.a = parse_number(text, *f, args[0]);
            init.b = parse_number(text, *f, args[1]);
            if (!(init.a < init.b))
                fail(text, std::string(f->signature) + ": lo must be < hi, got " + args[0] +
                               " and " + args[1]);
            break;
        case init_kind::randint:
            init.a = parse_integer_valued(text, *f, args[0]);
            init.b = parse_integer_valued(text, *f, args[1]);
            if (!(init.a < init.b))
                fail(text, std::string(f->signature) + ": lo must be < hi (hi is exclusive), got " +
                               args[0] + " and " + args[1]);
            break;
        case init_kind::constant:
            init.a = parse_number(text, *f, args[0]);
            init.b = 0.0;
            break;
        case init_kind::arange:
            init.a = parse_number(text, *f, args[0]);
            init.b = parse_number(text, *f, args[1]);
            break;
        case init_kind::int_edges:
            init.a = parse_integer_valued(text, *f, args[0]);
            init.b = parse_integer_valued(text, *f, args[1]);
            if (!(init.a <= init.b))
                fail(text, std::string(f->signature) + ": lo must be <= hi (both are included), got " +
                               args[0] + " and " + args[1]);
            break;
        case init_kind::spike:
            init.a = parse_number(text, *f, args[0]);
            init.b = parse_number(text, *f, args[1]);
            if (!(init.a > 0.0))
                fail(text, std::string(f->signature) + ": std must be > 0, got " + args[0]);
            try {
                init.total = dim_expr::parse(args[2]);
            } catch (const std::invalid_argument& e) {
                fail(text, std::string(f->signature) + ": " + e.what());
            }
            break;
        case init_kind::cu_seqlens:
            init.a = 0.0;
            init.b = 0.0;
            try {
                init.total = dim_expr::parse(args[0]);
            } catch (const std::invalid_argument& e) {
                fail(text, std::string(f->signature) + ": " + e.what());
            }
            break;
    }
    return init;
}

std::string to_string(init_kind k) {
    for (const form& f : forms)
        if (f.kind == k) return f.name;
    return "?";
}

std::optional<init_kind> init_kind_from_string(std::string_view s) {
    for (const form& f : forms)
        if (s == f.name) return f.kind;
    return std::nullopt;
}

}  // namespace kloop::spec
