// kloop spec: edit distance and near-miss suggestions.
#include "spec/spellcheck.hpp"

#include <algorithm>

namespace kloop::spec {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Full table rather than two rows: transpositions look two rows back, and words are short.
    const std::size_t n = a.size();
    const std::size_t m = b.size();
    std::vector<std::size_t> d((n + 1) * (m + 1));
    auto at = [m, &d](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
    for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
    for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
    for (std::size_t i = 1; i <= n; ++i) {
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            std::size_t best = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                best = std::min(best, at(i - 2, j - 2) + 1);
            at(i, j) = best;
        }
    }
    return at(n, m);
}

namespace {
bool equal_ignoring_case(std::string_view a, std::string_view b) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}
}  // namespace

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
    for (const std::string& c : candidates)
        if (equal_ignoring_case(word, c)) return c;
    // One- and two-letter words (dim names such as N, K) are one edit from each other: no guess.
    if (word.size() <= 2) return std::nullopt;
    const std::size_t threshold = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
    std::optional<std::string> best;
    std::size_t best_distance = threshold + 1;
    for (const std::string& c : candidates) {
        const std::size_t dist = edit_distance(word, c);
        if (dist < best_distance) {
            best_distance = dist;
            best = c;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    auto m = closest_match(word, candidates);
    return m ? " (did you mean '" + *m + "'?)" : std::string();
}

}  // namespace kloop::spec
