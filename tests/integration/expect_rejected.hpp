// Test helper: the expectations every "this broken candidate is rejected" test makes of a
// `kloop verify --json` run — exit 3, status gate_failed, and (when given) a phrase among the
// reasons and an integrity check that failed; and those of a candidate that exploits a gate
// trying only the listed cases (expect_fails_only_beyond_listed_cases).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "integration/kloop_process.hpp"

namespace kloop::testing {

inline void expect_rejected(const kloop_run& r, const std::string& reason_substring, const std::string& failed_check) {
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "gate_failed");
    if (!reason_substring.empty()) {
        EXPECT_NE(all_reasons(r.record).find(reason_substring), std::string::npos) << all_reasons(r.record);
    }
    if (!failed_check.empty()) {
        EXPECT_EQ(check_status(r.record, failed_check), "fail") << r.record.at("integrity").dump(2);
    }
}

// The gate's failing cases' reasons, one per line.
inline std::string gate_reasons(const nlohmann::json& rec) {
    std::string all;
    for (const auto& c : rec.at("gate").at("cases"))
        if (c.at("status") == "fail") all += c.at("reason").get<std::string>() + "\n";
    return all;
}

// A candidate right on every listed case and wrong beyond them (a held-out shape or param value,
// an adversarial distribution): rejected, every failing case a held-out or distribution one, and
// one of them named by `failing_shape`.
inline void expect_fails_only_beyond_listed_cases(const kloop_run& r, const std::string& failing_shape) {
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "gate_failed");
    bool found = false;
    for (const auto& c : r.record.at("gate").at("cases")) {
        if (c.at("status") != "fail") continue;
        const auto shape = c.at("shape").get<std::string>();
        found = found || shape.find(failing_shape) != std::string::npos;
        EXPECT_TRUE(shape.rfind("heldout_", 0) == 0 || shape.find('[') != std::string::npos)
            << "failed on a listed case: " << c.dump();
    }
    EXPECT_TRUE(found) << "no failing case on '" << failing_shape << "':\n" << gate_reasons(r.record);
}

}  // namespace kloop::testing
