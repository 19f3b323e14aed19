// Test helper: the expectations every "this broken candidate is rejected" test makes of a
// `kloop verify --json` run — exit 3, status gate_failed, and (when given) a phrase among the
// reasons and an integrity check that failed.
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

}  // namespace kloop::testing
