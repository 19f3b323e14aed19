// kloop cli: the options a per-evaluation `kloop compare` takes (see forwarded_options.hpp).
#include "cli/forwarded_options.hpp"

#include <algorithm>

namespace kloop::cli {

std::vector<std::string> forwarded_options(const std::vector<std::string>& argv, const std::string& verb,
                                           const std::string& positional, const std::vector<std::string>& drop_with_value,
                                           const std::vector<std::string>& drop_flags) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < argv.size() && argv[i] != verb) ++i;
    bool positional_seen = positional.empty();
    for (++i; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        const std::string name = a.substr(0, a.find('='));
        if (!positional_seen && a == positional) {
            positional_seen = true;
            continue;
        }
        if (std::find(drop_flags.begin(), drop_flags.end(), a) != drop_flags.end()) continue;
        if (std::find(drop_with_value.begin(), drop_with_value.end(), name) != drop_with_value.end()) {
            if (name == a) ++i;  // "--runs 4": skip the value too
            continue;
        }
        out.push_back(a);
    }
    return out;
}

}  // namespace kloop::cli
