/* SPDX-License-Identifier: BSD-3-Clause */
/* Stand-in for gearmand's gearmand/error.hpp as far as the libgearman-doc examples use it:
 * message() prints "PROGRAM: TEXT" on stderr. Both builds of an example (real libgearman and
 * libgearman-compat) use this same header, so its wording does not affect the comparison. */
#pragma once
#include <iostream>

namespace gearmand {
namespace error {

inline const char *&program_name()
{
    static const char *name = "";
    return name;
}

inline void init(const char *argv0) { program_name() = argv0; }

inline void message(const char *text) { std::cerr << program_name() << ": " << text << std::endl; }

inline void message(const char *text, const char *detail)
{
    std::cerr << program_name() << ": " << text << ", " << detail << std::endl;
}

} // namespace error
} // namespace gearmand
