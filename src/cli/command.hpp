// kloop cli: one verb of the command line.
//
// Responsibility: the small plug-in point for verbs. Each verb lives in its own file, declares
// its options on a CLI11 subcommand into a plain config struct (no globals), and runs against
// that struct, returning an exit code. The table in cli/commands.cpp lists them all.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kloop::cli {

struct invocation {
    std::vector<std::string> argv;         // the whole command line, for records
    std::ostream& out;
    std::ostream& err;
};

class command_base {
public:
    virtual ~command_base() = default;
    // Declare the subcommand's options; called once before parsing.
    void declare(CLI::App& sub) { do_declare(sub); }
    // Run after a successful parse; returns the process exit code. May throw kloop::error.
    int execute(const invocation& inv) { return do_execute(inv); }

protected:
    virtual void do_declare(CLI::App& sub) = 0;
    virtual int do_execute(const invocation& inv) = 0;
};

struct command_entry {
    const char* name;
    const char* description;
    std::unique_ptr<command_base> (*make)();
    bool hidden = false;  // a verb kloop runs itself (a Slurm task): left out of --help, the docs and completion
};

// The verbs, in the order --help lists them.
[[nodiscard]] const std::vector<command_entry>& command_table();

}  // namespace kloop::cli
