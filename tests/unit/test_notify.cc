// SPDX-License-Identifier: BSD-3-Clause
// Unit tests for notify.c: the sd_notify messages arrive on a unix datagram socket given as
// $NOTIFY_SOCKET, as systemd would receive them; without the socket every call is a no-op.
#include <gtest/gtest.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>

extern "C" {
#include "spur_config.h"
#include "notify.h"
}

namespace {

// A bound unix datagram socket standing in for systemd's notify socket.
class NotifySocket : public ::testing::Test {
protected:
    void SetUp() override
    {
#ifndef HAVE_LIBSYSTEMD
        GTEST_SKIP() << "built without libsystemd: notify_* are no-ops";
#endif
        char tmpl[] = "/tmp/spur-notify-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/notify.sock";
        fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ASSERT_GE(fd_, 0);
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        ASSERT_LT(path_.size(), sizeof sa.sun_path);
        memcpy(sa.sun_path, path_.c_str(), path_.size() + 1);
        ASSERT_EQ(bind(fd_, (struct sockaddr *)&sa, sizeof sa), 0);
        ASSERT_EQ(setenv("NOTIFY_SOCKET", path_.c_str(), 1), 0);
    }

    void TearDown() override
    {
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        if (fd_ >= 0)
            close(fd_);
        if (!path_.empty())
            unlink(path_.c_str());
        if (!dir_.empty())
            rmdir(dir_.c_str());
    }

    // next returns the next datagram, waiting at most 10 s (it was sent before we look).
    std::string next()
    {
        struct pollfd p = {fd_, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1)
            return "<nothing>";
        char buf[4096];
        ssize_t n = recv(fd_, buf, sizeof buf, 0);
        return n < 0 ? "<error>" : std::string(buf, (size_t)n);
    }

    // pending reports whether a datagram is waiting, without waiting.
    bool pending()
    {
        struct pollfd p = {fd_, POLLIN, 0};
        return poll(&p, 1, 0) == 1;
    }

    int fd_ = -1;
    std::string dir_, path_;
};

// has_line reports whether the notify message msg has the NAME=value line line.
bool has_line(const std::string &msg, const std::string &line)
{
    size_t pos = 0;
    while (pos <= msg.size()) {
        size_t end = msg.find('\n', pos);
        if (end == std::string::npos)
            end = msg.size();
        if (msg.compare(pos, end - pos, line) == 0)
            return true;
        pos = end + 1;
    }
    return false;
}

} // namespace

TEST_F(NotifySocket, ReadySendsReady1)
{
    EXPECT_EQ(notify_ready(), 1);
    std::string m = next();
    EXPECT_TRUE(has_line(m, "READY=1")) << m;
    EXPECT_FALSE(pending());
}

TEST_F(NotifySocket, WatchdogSendsWatchdog1)
{
    EXPECT_EQ(notify_watchdog(), 1);
    std::string m = next();
    EXPECT_TRUE(has_line(m, "WATCHDOG=1")) << m;
    EXPECT_FALSE(has_line(m, "READY=1")) << m;
}

TEST_F(NotifySocket, StoppingSendsStopping1)
{
    EXPECT_EQ(notify_stopping(), 1);
    std::string m = next();
    EXPECT_TRUE(has_line(m, "STOPPING=1")) << m;
}

TEST_F(NotifySocket, EnvironmentKeptForLaterCalls)
{
    // sd_notify(unset_environment=0): READY, then the watchdog pings, then STOPPING all arrive
    EXPECT_EQ(notify_ready(), 1);
    EXPECT_EQ(notify_watchdog(), 1);
    EXPECT_EQ(notify_stopping(), 1);
    EXPECT_TRUE(has_line(next(), "READY=1"));
    EXPECT_TRUE(has_line(next(), "WATCHDOG=1"));
    EXPECT_TRUE(has_line(next(), "STOPPING=1"));
    EXPECT_NE(getenv("NOTIFY_SOCKET"), nullptr);
}

TEST_F(NotifySocket, WatchdogIntervalIsHalfWatchdogUsec)
{
    EXPECT_EQ(notify_watchdog_interval(), 0.0); // not set: no timer
    ASSERT_EQ(setenv("WATCHDOG_USEC", "3000000", 1), 0);
    EXPECT_DOUBLE_EQ(notify_watchdog_interval(), 1.5);
    std::string me = std::to_string((long)getpid());
    ASSERT_EQ(setenv("WATCHDOG_PID", me.c_str(), 1), 0);
    EXPECT_DOUBLE_EQ(notify_watchdog_interval(), 1.5);
    ASSERT_EQ(setenv("WATCHDOG_PID", "1", 1), 0); // meant for another process
    EXPECT_EQ(notify_watchdog_interval(), 0.0);
    ASSERT_EQ(setenv("WATCHDOG_USEC", "0", 1), 0);
    unsetenv("WATCHDOG_PID");
    EXPECT_EQ(notify_watchdog_interval(), 0.0);
}

TEST_F(NotifySocket, MissingSocketIsAnError)
{
    std::string gone = dir_ + "/gone.sock";
    ASSERT_EQ(setenv("NOTIFY_SOCKET", gone.c_str(), 1), 0);
    EXPECT_EQ(notify_ready(), -1);
}

TEST(Notify, NoSocketIsANoOp)
{
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    EXPECT_EQ(notify_ready(), 0);
    EXPECT_EQ(notify_watchdog(), 0);
    EXPECT_EQ(notify_stopping(), 0);
    EXPECT_EQ(notify_watchdog_interval(), 0.0);
}
