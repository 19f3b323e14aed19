// kloop spec: recursive-descent parser and checked int64 evaluator for dim expressions.
//
// Parsing builds an immutable tree shared by copies of the dim_expr; evaluation walks it with
// every arithmetic step checked (__builtin_*_overflow), so a shape that does not fit in int64
// is an error rather than a silently wrapped size.
#include "spec/dim_expr.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <utility>

namespace kloop::spec {

struct dim_expr::node {
    enum class kind { number, name, negate, add, sub, mul, div, mod, min, max, ceil_div };
    kind op = kind::number;
    std::int64_t value = 0;               // number
    std::string name;                     // name
    std::shared_ptr<const node> lhs;      // unary operand or left operand
    std::shared_ptr<const node> rhs;      // right operand
};

namespace {

using node = dim_expr::node;
using node_ptr = std::shared_ptr<const node>;

// `depth` counts nested parentheses, calls and unary minuses.
// Deep nesting or a huge formula is not a real shape; the caps keep a hostile spec from blowing
// the stack in the (recursive) parser, evaluator and destructor.
constexpr int max_depth = 200;
constexpr std::size_t max_length = 4096;

bool is_name_start(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

node_ptr make_binary(node::kind k, node_ptr a, node_ptr b) {
    auto n = std::make_shared<node>();
    n->op = k;
    n->lhs = std::move(a);
    n->rhs = std::move(b);
    return n;
}

class parser {
public:
    explicit parser(const std::string& text) : m_text(text) {}

    node_ptr parse_all() {
        if (m_text.size() > max_length)
            throw std::invalid_argument("dim expression is longer than " +
                                        std::to_string(max_length) + " characters");
        skip_space();
        if (m_pos == m_text.size()) fail_here("empty expression");
        node_ptr root = parse_expr(0);
        skip_space();
        if (m_pos != m_text.size())
            fail_here(std::string("unexpected '") + m_text[m_pos] + "'");
        return root;
    }

private:
    const std::string& m_text;
    std::size_t m_pos = 0;

    [[noreturn]] void fail_at(std::size_t pos, const std::string& why) const {
        throw std::invalid_argument("dim expression '" + m_text + "': " + why + " at position " +
                                    std::to_string(pos + 1));
    }
    [[noreturn]] void fail_here(const std::string& why) const { fail_at(m_pos, why); }

    void skip_space() {
        while (m_pos < m_text.size() &&
               (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' ||
                m_text[m_pos] == '\r'))
            ++m_pos;
    }

    bool accept(char c) {
        skip_space();
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }

    void expect(char c) {
        if (!accept(c)) {
            if (m_pos == m_text.size())
                fail_here(std::string("expected '") + c + "' but the expression ended");
            fail_here(std::string("expected '") + c + "' but found '" + m_text[m_pos] + "'");
        }
    }

    void check_depth(int depth) const {
        if (depth > max_depth) fail_here("nested too deeply");
    }

    // expr := term (('+'|'-') term)*
    node_ptr parse_expr(int depth) {
        node_ptr left = parse_term(depth);
        for (;;) {
            if (accept('+'))
                left = make_binary(node::kind::add, left, parse_term(depth));
            else if (accept('-'))
                left = make_binary(node::kind::sub, left, parse_term(depth));
            else
                return left;
        }
    }

    // term := unary (('*'|'/'|'%') unary)*
    node_ptr parse_term(int depth) {
        node_ptr left = parse_unary(depth);
        for (;;) {
            if (accept('*'))
                left = make_binary(node::kind::mul, left, parse_unary(depth));
            else if (accept('/'))
                left = make_binary(node::kind::div, left, parse_unary(depth));
            else if (accept('%'))
                left = make_binary(node::kind::mod, left, parse_unary(depth));
            else
                return left;
        }
    }

    // unary := '-' unary | atom
    node_ptr parse_unary(int depth) {
        check_depth(depth);
        if (accept('-')) {
            auto n = std::make_shared<node>();
            n->op = node::kind::negate;
            n->lhs = parse_unary(depth + 1);
            return n;
        }
        return parse_atom(depth);
    }

    // atom := integer | name | name '(' expr (',' expr)* ')' | '(' expr ')'
    node_ptr parse_atom(int depth) {
        skip_space();
        if (m_pos == m_text.size())
            fail_here("expected a number, a name or '(' but the expression ended");
        const char c = m_text[m_pos];
        if (c == '(') {
            ++m_pos;
            node_ptr inner = parse_expr(depth + 1);
            expect(')');
            return inner;
        }
        if (is_digit(c)) return parse_number();
        if (is_name_start(c)) return parse_name_or_call(depth);
        fail_here(std::string("expected a number, a name or '(' but found '") + c + "'");
    }

    node_ptr parse_number() {
        const std::size_t start = m_pos;
        std::int64_t v = 0;
        while (m_pos < m_text.size() && is_digit(m_text[m_pos])) {
            const std::int64_t digit = m_text[m_pos] - '0';
            if (__builtin_mul_overflow(v, std::int64_t{10}, &v) ||
                __builtin_add_overflow(v, digit, &v))
                fail_at(start, "integer literal does not fit in 64 bits");
            ++m_pos;
        }
        if (m_pos < m_text.size() && is_name_start(m_text[m_pos]))
            fail_here(std::string("unexpected '") + m_text[m_pos] + "' after a number");
        auto n = std::make_shared<node>();
        n->op = node::kind::number;
        n->value = v;
        return n;
    }

    node_ptr parse_name_or_call(int depth) {
        const std::size_t start = m_pos;
        while (m_pos < m_text.size() && is_name_char(m_text[m_pos])) ++m_pos;
        std::string name = m_text.substr(start, m_pos - start);
        if (!accept('(')) {
            auto n = std::make_shared<node>();
            n->op = node::kind::name;
            n->name = std::move(name);
            return n;
        }
        node::kind k{};
        if (name == "min")
            k = node::kind::min;
        else if (name == "max")
            k = node::kind::max;
        else if (name == "ceil_div")
            k = node::kind::ceil_div;
        else
            fail_at(start, "unknown function '" + name + "' (known: min, max, ceil_div)");
        std::vector<node_ptr> args;
        args.push_back(parse_expr(depth + 1));
        while (accept(',')) args.push_back(parse_expr(depth + 1));
        expect(')');
        if (args.size() != 2)
            fail_at(start, name + "(a, b) takes 2 arguments, got " + std::to_string(args.size()));
        return make_binary(k, args[0], args[1]);
    }
};

// Floor division and its remainder (Python semantics): the quotient rounds toward -infinity,
// the remainder has the divisor's sign.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
    std::int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;  // |r| < |b| and opposite signs: no overflow
    return r;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
    return q;
}

class evaluator {
public:
    evaluator(const std::string& text, const dim_env& env) : m_text(text), m_env(env) {}

    std::int64_t eval(const node& n) const {
        switch (n.op) {
            case node::kind::number: return n.value;
            case node::kind::name: {
                auto it = m_env.find(n.name);
                if (it == m_env.end())
                    throw std::invalid_argument("dim expression '" + m_text + "': unknown dim '" +
                                                n.name + "'");
                return it->second;
            }
            case node::kind::negate: {
                std::int64_t r = 0;
                if (__builtin_sub_overflow(std::int64_t{0}, eval(*n.lhs), &r)) overflow("negation");
                return r;
            }
            default: break;
        }
        const std::int64_t a = eval(*n.lhs);
        const std::int64_t b = eval(*n.rhs);
        std::int64_t r = 0;
        switch (n.op) {
            case node::kind::add:
                if (__builtin_add_overflow(a, b, &r)) overflow("addition");
                return r;
            case node::kind::sub:
                if (__builtin_sub_overflow(a, b, &r)) overflow("subtraction");
                return r;
            case node::kind::mul:
                if (__builtin_mul_overflow(a, b, &r)) overflow("multiplication");
                return r;
            case node::kind::div:
            case node::kind::mod:
            case node::kind::ceil_div: {
                if (b == 0)
                    throw std::invalid_argument("dim expression '" + m_text + "': division by zero");
                // The one quotient that does not fit: INT64_MIN / -1.
                if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
                    if (n.op == node::kind::mod) return 0;
                    overflow("division");
                }
                if (n.op == node::kind::div) return floor_div(a, b);
                if (n.op == node::kind::ceil_div) return ceil_div(a, b);
                return floor_mod(a, b);
            }
            case node::kind::min: return std::min(a, b);
            case node::kind::max: return std::max(a, b);
            default: break;
        }
        throw std::logic_error("dim_expr: corrupt expression tree");
    }

private:
    const std::string& m_text;
    const dim_env& m_env;

    [[noreturn]] void overflow(const char* what) const {
        throw std::overflow_error("dim expression '" + m_text + "': int64 overflow in " + what);
    }
};

void collect_names(const node& n, std::vector<std::string>& out) {
    if (n.op == node::kind::name) out.push_back(n.name);
    if (n.lhs) collect_names(*n.lhs, out);
    if (n.rhs) collect_names(*n.rhs, out);
}

}  // namespace

dim_expr::dim_expr() = default;

dim_expr dim_expr::parse(const std::string& text) {
    dim_expr e;
    e.m_text = text;
    e.m_root = parser(e.m_text).parse_all();
    return e;
}

std::int64_t dim_expr::eval(const dim_env& env) const {
    if (!m_root) throw std::invalid_argument("dim expression is empty (never parsed)");
    return evaluator(m_text, env).eval(*m_root);
}

std::vector<std::string> dim_expr::get_names() const {
    std::vector<std::string> names;
    if (m_root) collect_names(*m_root, names);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

}  // namespace kloop::spec
