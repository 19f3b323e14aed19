// Unit under test: platform/slurm_array — tasks as a Slurm job array: the scripts, the sbatch
// call for the missing tasks only, waiting on squeue, gathering records, devices and hosts, and
// resuming an earlier call's job. sbatch and squeue are a fake that runs the array's tasks with
// bash as Slurm would (SLURM_ARRAY_TASK_ID, CUDA_VISIBLE_DEVICES).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/slurm_array.hpp"

namespace fs = std::filesystem;
using namespace kloop::platform;

namespace {

class fake_slurm final : public command_runner_base {
public:
    std::vector<std::vector<std::string>> sbatch_calls;
    int squeue_running = 0;        // how many squeue calls still report the job
    std::string next_id = "42";
    bool refuse = false;

protected:
    process_result do_run(const process_request& r) override {
        process_result res;
        res.started = true;
        res.exit_code = 0;
        if (r.argv.at(0) == "squeue") {
            if (squeue_running > 0) {
                --squeue_running;
                res.stdout_text = r.argv.at(3) + "\n";
            }
            return res;
        }
        if (r.argv.at(0) != "sbatch") return m_real.run(r);
        sbatch_calls.push_back(r.argv);
        if (refuse) {
            res.exit_code = 1;
            res.stderr_text = "sbatch: error: Invalid generic resource (gres) specification\n";
            return res;
        }
        std::string list;
        for (const auto& a : r.argv)
            if (a.rfind("--array=", 0) == 0) list = a.substr(8);
        const std::string script = r.argv.back();
        for (std::size_t at = 0; at <= list.size();) {  // run every listed task, as Slurm would
            const auto comma = list.find(',', at);
            const std::string id = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            process_request t;
            t.argv = {"bash", script};
            t.env_overrides = {{"SLURM_ARRAY_TASK_ID", id}, {"CUDA_VISIBLE_DEVICES", "7"}};
            (void)m_real.run(t);
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        res.stdout_text = next_id + "\n";
        return res;
    }

private:
    posix_command_runner m_real;
};

class SlurmArrayTest : public ::testing::Test {
protected:
    scoped_temp_dir m_dir{"kloop-slurm-array-test"};
    fake_slurm m_slurm;
    slurm_options m_opt;
    std::vector<slurm_task> m_tasks;

    void SetUp() override {
        m_opt.state_dir = m_dir.path() / "state";
        m_opt.poll_s = 0.01;
        for (int i = 0; i < 3; ++i) {
            slurm_task t;
            t.record = m_dir.path() / ("rec-" + std::to_string(i) + ".json");
            t.argv = {"/bin/sh", "-c", "echo \"{\\\"task\\\": " + std::to_string(i) + "}\" > '" + t.record.string() + "'"};
            m_tasks.push_back(t);
        }
    }
};

TEST_F(SlurmArrayTest, SubmitsOnlyTheMissingTasksWaitsAndGathersDevicesAndHosts) {
    write_file_atomic(m_tasks[1].record, "{}\n");  // already done
    m_slurm.squeue_running = 2;
    const auto out = run_slurm_array(m_tasks, m_opt, m_slurm);
    ASSERT_EQ(m_slurm.sbatch_calls.size(), 1u);
    const auto& call = m_slurm.sbatch_calls.front();
    EXPECT_NE(std::find(call.begin(), call.end(), "--array=0,2"), call.end());
    EXPECT_NE(std::find(call.begin(), call.end(), "--gres=gpu:1"), call.end());
    EXPECT_NE(std::find(call.begin(), call.end(), "--parsable"), call.end());
    EXPECT_EQ(out.job_ids, (std::vector<std::string>{"42"}));
    EXPECT_FALSE(out.resumed);
    EXPECT_EQ(m_slurm.squeue_running, 0);  // it waited until the job left the queue
    ASSERT_EQ(out.tasks.size(), 3u);
    for (const auto& t : out.tasks) EXPECT_TRUE(t.done);
    EXPECT_EQ(out.tasks[0].device, "7");
    EXPECT_FALSE(out.tasks[0].host.empty());
    EXPECT_EQ(read_file(m_tasks[2].record), "{\"task\": 2}\n");
}

TEST_F(SlurmArrayTest, ASecondCallWaitsForTheEarlierJobAndSubmitsOnlyWhatIsStillMissing) {
    m_slurm.refuse = false;
    (void)run_slurm_array(m_tasks, m_opt, m_slurm);  // job 42 ran every task
    fs::remove(m_tasks[1].record);                   // one record lost
    m_slurm.next_id = "43";
    m_slurm.squeue_running = 3;                      // job 42 still "running" for a while
    const auto out = run_slurm_array(m_tasks, m_opt, m_slurm);
    EXPECT_TRUE(out.resumed);
    EXPECT_EQ(out.job_ids, (std::vector<std::string>{"42", "43"}));
    ASSERT_EQ(m_slurm.sbatch_calls.size(), 2u);
    const auto& call = m_slurm.sbatch_calls.back();
    EXPECT_NE(std::find(call.begin(), call.end(), "--array=1"), call.end());
    for (const auto& t : out.tasks) EXPECT_TRUE(t.done);
    // Nothing missing: a third call submits nothing.
    const auto again = run_slurm_array(m_tasks, m_opt, m_slurm);
    EXPECT_EQ(m_slurm.sbatch_calls.size(), 2u);
    EXPECT_TRUE(again.resumed);
}

TEST_F(SlurmArrayTest, AnotherRunsStateAndARefusedJobAreUsageErrors) {
    (void)run_slurm_array(m_tasks, m_opt, m_slurm);
    m_tasks.pop_back();
    try {
        (void)run_slurm_array(m_tasks, m_opt, m_slurm);
        ADD_FAILURE() << "accepted another run's state directory";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("another run's Slurm state"), std::string::npos) << e.what();
    }
    m_opt.state_dir = m_dir.path() / "other";
    for (const auto& t : m_tasks) fs::remove(t.record);  // something to submit
    m_slurm.refuse = true;
    try {
        (void)run_slurm_array(m_tasks, m_opt, m_slurm);
        ADD_FAILURE() << "a refused sbatch passed";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("Invalid generic resource"), std::string::npos) << e.what();
    }
}

TEST(ShellWordTest, BashReadsBackWhatWasQuoted) {
    posix_command_runner sh;
    for (const std::string s : {"plain", "two words", "it's", "$HOME `x` \"q\" \\n", ""}) {
        process_request r;
        r.argv = {"bash", "-c", "printf %s " + shell_word(s)};
        EXPECT_EQ(sh.run(r).stdout_text, s) << s;
    }
}

}  // namespace
