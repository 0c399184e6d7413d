/* SPDX-License-Identifier: BSD-3-Clause */
// Regression tests for problems the fuzz targets found (fuzz/, docs/FUZZING.md). Each test names
// the corpus file that reproduces the problem in the fuzz target.
#include <gtest/gtest.h>

#include <string>

#include "fake_shell.h"

extern "C" {
#include "admin.h"
#include "spur_config.h"
}

using std::string;

class RegressionTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:r");
        f.start();
    }
};

// fuzz/corpus/fuzz_connection/regress-resume-empty-input (fixed in dde57fd)
//
// A 'show jobs' longer than one slice finishes in a later loop iteration; admin_continue then
// calls the shell's resume, and conn_resume calls peer_process() although nothing was buffered
// while the listing was written. peer_process passed buf_head(&p->in) on: with the buffer freed
// (data == NULL) that is NULL + 0, undefined behaviour in C. clang's -fsanitize=undefined
// (pointer-overflow) aborted here:
//     src/buf.h:23:68: runtime error: applying zero offset to null pointer
//     #0 buf_head src/buf.h:23   #1 peer_process src/peer.c:272   #2 conn_resume / resume
//     #3 admin_continue src/admin.c:192
// GCC's sanitizer does not check this case: the test can only fail in a clang UBSan build.
TEST_F(RegressionTest, ResumeAfterLongListingWithNothingBuffered)
{
    peer *c = f.connect();
    string in;
    for (int i = 0; i < ADMIN_SLICE + 5; i++)
        in += FakeShell::req(CMD_SUBMIT_JOB_BG, string("f\0\0x", 4));
    ASSERT_EQ(FakeShell::feed(c, in), 0);
    FakeShell::take(c);
    ASSERT_EQ(FakeShell::feed(c, "show jobs\n"), 0);
    ASSERT_FALSE(list_empty(&f.eng.listings)) << "the listing spans iterations";
    EXPECT_EQ(buf_len(&c->in), 0u);
    EXPECT_EQ(c->in.data, nullptr) << "nothing is buffered while the listing is written";
    int rounds = 0;
    while (!list_empty(&f.eng.listings) && rounds++ < 10)
        admin_continue(&f.eng); // the last slice resumes the peer: session_process on empty input
    EXPECT_TRUE(list_empty(&f.eng.listings));
    string out = FakeShell::take(c);
    EXPECT_EQ(out.substr(out.size() - 2), ".\n");
    ASSERT_EQ(FakeShell::feed(c, "version\n"), 0);
    EXPECT_EQ(FakeShell::take(c), "OK " PACKAGE_VERSION "\n");
    char err[256];
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    EXPECT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
}
