// kloop loop: strategy fingerprints (see fingerprint.hpp).
#include "loop/fingerprint.hpp"

#include <algorithm>
#include <cctype>

#include "platform/sha256.hpp"

namespace kloop::loop {

std::string normalise_tag(const std::string& tag) {
    std::string out;
    bool dash = false;
    for (unsigned char c : tag) {
        if (c == '`') continue;
        if (std::isspace(c) != 0 || c == '_' || c == '-') {
            dash = true;
            continue;
        }
        if (dash && !out.empty()) out += '-';
        dash = false;
        out += static_cast<char>(std::tolower(c));
    }
    return out;
}

std::vector<std::string> normalise_tags(const std::vector<std::string>& tags) {
    std::vector<std::string> out;
    for (const auto& t : tags)
        if (auto n = normalise_tag(t); !n.empty()) out.push_back(std::move(n));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string fingerprint_of(const std::string& backend, const std::vector<std::string>& tags) {
    platform::sha256_hasher h;
    h.update_field(backend);
    for (const auto& t : normalise_tags(tags)) h.update_field(t);
    return h.hex_digest().substr(0, 16);
}

}  // namespace kloop::loop
