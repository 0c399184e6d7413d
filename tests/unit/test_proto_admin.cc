/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the admin line finder and tokenizer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include "proto_admin.h"
}

static std::vector<std::string> split(const std::string &s)
{
    pa_token t[PA_MAX_TOKENS];
    size_t n = pa_split(s.data(), s.size(), t, PA_MAX_TOKENS);
    std::vector<std::string> out;
    for (size_t i = 0; i < n && i < PA_MAX_TOKENS; i++)
        out.emplace_back(t[i].ptr, t[i].len);
    return out;
}

TEST(ProtoAdmin, LineWithLf)
{
    size_t len, used;
    ASSERT_EQ(pa_find_line("status\nrest", 11, 100, &len, &used), PA_OK);
    EXPECT_EQ(len, 6u);
    EXPECT_EQ(used, 7u);
}

TEST(ProtoAdmin, LineWithCrLfDropsOneCr)
{
    size_t len, used;
    ASSERT_EQ(pa_find_line("ab\r\r\n", 5, 100, &len, &used), PA_OK);
    EXPECT_EQ(len, 3u);
    EXPECT_EQ(used, 5u);
}

TEST(ProtoAdmin, NeedMoreThenTooLong)
{
    size_t len, used;
    EXPECT_EQ(pa_find_line("abcd", 4, 10, &len, &used), PA_NEED_MORE);
    EXPECT_EQ(pa_find_line("abcdefghij", 10, 10, &len, &used), PA_TOO_LONG);
    // a newline exactly at the limit is fine; one past it is too long
    EXPECT_EQ(pa_find_line("abcdefghi\n", 10, 10, &len, &used), PA_OK);
    EXPECT_EQ(pa_find_line("abcdefghij\n", 11, 10, &len, &used), PA_TOO_LONG);
}

TEST(ProtoAdmin, SplitCollapsesSpaces)
{
    EXPECT_EQ(split("maxqueue  fn   1 2"), (std::vector<std::string>{"maxqueue", "fn", "1", "2"}));
}

TEST(ProtoAdmin, LeadingSpaceGivesEmptyFirstToken)
{
    auto t = split(" status");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0], "");
    EXPECT_EQ(t[1], "status");
}

TEST(ProtoAdmin, TrailingSpacesAndTabs)
{
    EXPECT_EQ(split("status  "), (std::vector<std::string>{"status"}));
    EXPECT_EQ(split("a\tb"), (std::vector<std::string>{"a\tb"})) << "tabs are not separators";
    EXPECT_TRUE(split("").empty());
}

TEST(ProtoAdmin, CountsBeyondMax)
{
    pa_token t[2];
    EXPECT_EQ(pa_split("a b c d", 7, t, 2), 4u);
    EXPECT_EQ(std::string(t[1].ptr, t[1].len), "b");
}

TEST(ProtoAdmin, TokenIsCaseInsensitive)
{
    pa_token t = {"VeRsIoN", 7};
    EXPECT_TRUE(pa_token_is(&t, "version"));
    EXPECT_FALSE(pa_token_is(&t, "versions"));
    pa_token short_tok = {"ver", 3};
    EXPECT_FALSE(pa_token_is(&short_tok, "version"));
}
