// kloop eval: --gate-k expression parser (recursive descent: or > and > not > atom), bounded in
// length and nesting.
#include "eval/keyword_filter.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace kloop::eval {

struct keyword_filter::node {
    enum class kind { word, op_and, op_or, op_not } k = kind::word;
    std::string word;
    std::shared_ptr<const node> lhs, rhs;
};

namespace {

using node_ptr = std::shared_ptr<const keyword_filter::node>;
using kind = keyword_filter::node::kind;

// Bounds that keep parsing, evaluating and destroying a tree within a small stack: an expression
// of real gate names is a few words deep.
constexpr std::size_t max_tokens = 1000;
constexpr int max_nesting = 64;  // parentheses and 'not's, one inside another

class parser {
public:
    explicit parser(std::string_view text) : m_text(text) {
        tokenize();
        if (m_tokens.size() > max_tokens)
            fail("longer than " + std::to_string(max_tokens) + " words and parentheses");
    }

    node_ptr parse() {
        if (m_tokens.empty()) fail("the expression is empty");
        auto n = parse_or();
        if (m_pos != m_tokens.size()) fail("unexpected '" + m_tokens[m_pos] + "'");
        return n;
    }

private:
    [[noreturn]] void fail(const std::string& why) const {
        throw usage_error("option --gate-k '" + std::string(m_text) + "': " + why +
                          " (use words joined by and, or, not and parentheses)");
    }

    void tokenize() {
        std::size_t i = 0;
        while (i < m_text.size()) {
            const char c = m_text[i];
            if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
            if (c == '(' || c == ')') { m_tokens.emplace_back(1, c); ++i; continue; }
            std::size_t j = i;
            while (j < m_text.size() && !std::isspace(static_cast<unsigned char>(m_text[j])) &&
                   m_text[j] != '(' && m_text[j] != ')')
                ++j;
            m_tokens.emplace_back(m_text.substr(i, j - i));
            i = j;
        }
    }

    [[nodiscard]] bool peek(const char* t) const { return m_pos < m_tokens.size() && m_tokens[m_pos] == t; }

    node_ptr binary(kind k, node_ptr l, node_ptr r) {
        auto n = std::make_shared<keyword_filter::node>();
        n->k = k;
        n->lhs = std::move(l);
        n->rhs = std::move(r);
        return n;
    }

    node_ptr parse_or() {
        auto l = parse_and();
        while (peek("or")) { ++m_pos; l = binary(kind::op_or, l, parse_and()); }
        return l;
    }
    node_ptr parse_and() {
        auto l = parse_not();
        while (peek("and")) { ++m_pos; l = binary(kind::op_and, l, parse_not()); }
        return l;
    }
    // Entering one more level of nesting; fails past max_nesting.
    void deeper() {
        if (++m_depth > max_nesting) fail("nested deeper than " + std::to_string(max_nesting) + " levels");
    }

    node_ptr parse_not() {
        if (peek("not")) {
            ++m_pos;
            deeper();
            auto n = binary(kind::op_not, parse_not(), nullptr);
            --m_depth;
            return n;
        }
        return parse_atom();
    }
    node_ptr parse_atom() {
        if (m_pos >= m_tokens.size()) fail("the expression ends too early");
        const std::string& t = m_tokens[m_pos];
        if (t == "(") {
            ++m_pos;
            deeper();
            auto n = parse_or();
            if (!peek(")")) fail("missing ')'");
            ++m_pos;
            --m_depth;
            return n;
        }
        if (t == ")" || t == "and" || t == "or") fail("unexpected '" + t + "'");
        ++m_pos;
        auto n = std::make_shared<keyword_filter::node>();
        n->word = lower(t);
        return n;
    }

    std::string_view m_text;
    std::vector<std::string> m_tokens;
    std::size_t m_pos = 0;
    int m_depth = 0;
};

bool eval_node(const keyword_filter::node& n, const std::string& name) {
    switch (n.k) {
        case kind::word: return name.find(n.word) != std::string::npos;
        case kind::op_and: return eval_node(*n.lhs, name) && eval_node(*n.rhs, name);
        case kind::op_or: return eval_node(*n.lhs, name) || eval_node(*n.rhs, name);
        case kind::op_not: return !eval_node(*n.lhs, name);
    }
    return false;
}

}  // namespace

keyword_filter keyword_filter::parse(std::string_view expression) {
    keyword_filter f;
    f.m_text = std::string(expression);
    f.m_root = parser(expression).parse();
    return f;
}

bool keyword_filter::matches(std::string_view name) const { return eval_node(*m_root, lower(name)); }

}  // namespace kloop::eval
