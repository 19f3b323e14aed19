// kloop core: the error types the library throws and the exit codes the CLI maps them to.
//
// Responsibility: one place that defines kloop's documented exit codes and the exception
// hierarchy. The library throws; src/cli catches once at the top, prints, and exits with
// error::code(). User and environment errors carry a plain message (no source location);
// internal_error is for bugs. A candidate's failure is never an exception: it is data
// (see runner/outcome).
#pragma once

#include <stdexcept>
#include <string>

namespace kloop {

enum class exit_code : int {
    success = 0,
    internal_error = 1,
    usage_error = 2,      // bad command line, bad or missing spec
    gate_red = 3,         // the candidate failed the correctness gate (or crashed, hung, returned non-zero)
    build_failed = 4,     // the candidate or reference did not compile
    contract_violated = 5,// a frozen file changed since the contract was written
    profile_unavailable = 6, // kloop profile: no capture (ncu missing, no counter permission, ncu failed)
    proposer_failed = 7,  // kloop run: the proposer failed or was refused --max-failures times in a row
    interrupted = 130,
};

class error : public std::runtime_error {
public:
    error(exit_code code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    [[nodiscard]] exit_code get_code() const noexcept { return m_code; }

private:
    exit_code m_code;
};

// Bad options, bad arguments, unreadable files the user named.
class usage_error : public error {
public:
    explicit usage_error(const std::string& message) : error(exit_code::usage_error, message) {}
};

// A malformed op spec: names the file, the line (0 when unknown) and the field.
class spec_error : public error {
public:
    spec_error(std::string file, int line, std::string field, const std::string& why);
    [[nodiscard]] const std::string& get_file() const noexcept { return m_file; }
    [[nodiscard]] int get_line() const noexcept { return m_line; }
    [[nodiscard]] const std::string& get_field() const noexcept { return m_field; }

private:
    std::string m_file;
    int m_line;
    std::string m_field;
};

class build_error : public error {
public:
    explicit build_error(const std::string& message) : error(exit_code::build_failed, message) {}
};

class contract_error : public error {
public:
    explicit contract_error(const std::string& message) : error(exit_code::contract_violated, message) {}
};

// A bug in kloop itself.
class internal_error : public error {
public:
    explicit internal_error(const std::string& message) : error(exit_code::internal_error, message) {}
};

}  // namespace kloop
