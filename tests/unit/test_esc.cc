/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the escaping of names in the admin listings (esc.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

extern "C" {
#include "esc.h"
}

static std::string enc(const std::string &s, unsigned flags = 0)
{
    std::string out(ESC_MAX(s.size()), '\0');
    out.resize(esc_encode(s.data(), s.size(), &out[0], flags));
    return out;
}

static std::string dec(std::string s)
{
    s.resize(esc_decode(&s[0], s.size()));
    return s;
}

TEST(Esc, OrdinaryNamesAreUnchanged)
{
    for (const char *s : {"reverse", "App\\Jobs\\Mail", "a:b/c.d-e_f", "50%", "100%off", "%",
                          "%4", "%zz", "caf\xc3\xa9", "a\"b'c", "x=1&y=2"}) {
        EXPECT_EQ(enc(s), s) << s;
        EXPECT_EQ(enc(s, ESC_SPACE), s) << s;
        EXPECT_FALSE(esc_needed(s, strlen(s), ESC_SPACE)) << s;
    }
    EXPECT_EQ(enc("a b"), "a b") << "space is kept where it does not separate columns";
}

TEST(Esc, RowBreakingBytesAreEscaped)
{
    EXPECT_EQ(enc("pre\tfunc"), "pre%09func");
    EXPECT_EQ(enc("a\nb\rc"), "a%0Ab%0Dc");
    EXPECT_EQ(enc(std::string("a\0b", 3)), "a%00b");
    EXPECT_EQ(enc("\x1b[2J\x7f"), "%1B[2J%7F");
    EXPECT_EQ(enc("a b", ESC_SPACE), "a%20b");
    EXPECT_EQ(enc("f\t1\t0\t0\nforged"), "f%091%090%090%0Aforged")
        << "a name that looks like a row stays one field";
    EXPECT_TRUE(esc_needed("a\tb", 3, 0));
    EXPECT_FALSE(esc_needed("a b", 3, 0));
    EXPECT_TRUE(esc_needed("a b", 3, ESC_SPACE));
}

TEST(Esc, PercentIsEscapedOnlyBeforeTwoHexDigits)
{
    EXPECT_EQ(enc("a%41"), "a%2541");
    EXPECT_EQ(enc("%0a%0A"), "%250a%250A");
    EXPECT_EQ(enc("%4g"), "%4g");
    EXPECT_EQ(enc("%\t"), "%%09") << "the % is not before hex digits in the name";
    EXPECT_EQ(dec("%%09"), "%\t");
}

TEST(Esc, DecodeTakesEitherCaseAndKeepsLoosePercents)
{
    EXPECT_EQ(dec("pre%09func"), "pre\tfunc");
    EXPECT_EQ(dec("a%0a%0D"), "a\n\r");
    EXPECT_EQ(dec("a%20b"), "a b");
    EXPECT_EQ(dec("50%"), "50%");
    EXPECT_EQ(dec("%4"), "%4");
    EXPECT_EQ(dec("%g0"), "%g0");
    EXPECT_EQ(dec("%2541"), "%41") << "decoded once, not again";
    EXPECT_EQ(dec(""), "");
}

TEST(Esc, RoundTripOverEveryShortString)
{
    // every string of up to 5 bytes over an alphabet that makes escapes and near-escapes
    const std::string alpha = std::string("%0aG \t\n", 7) + std::string(1, '\0');
    size_t n = alpha.size(), checked = 0;
    for (size_t len = 0; len <= 5; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= n;
        for (size_t k = 0; k < total; k++) {
            std::string s;
            for (size_t i = 0, v = k; i < len; i++, v /= n)
                s += alpha[v % n];
            for (unsigned flags : {0u, (unsigned)ESC_SPACE}) {
                std::string e = enc(s, flags);
                ASSERT_EQ(dec(e), s) << "flags " << flags;
                for (char c : e) {
                    ASSERT_FALSE(c == '\t' || c == '\n' || c == '\r' || c == '\0');
                    ASSERT_FALSE(flags && c == ' ');
                }
                checked++;
            }
        }
    }
    EXPECT_GT(checked, 60000u);
}
