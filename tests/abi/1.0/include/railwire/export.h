/* SPDX-License-Identifier: MIT */
/* RAILWIRE_API marks the symbols the shared library exports; everything
 * else is built with hidden visibility. */
#ifndef RAILWIRE_EXPORT_H
#define RAILWIRE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RAILWIRE_API __attribute__((visibility("default")))
#else
#define RAILWIRE_API
#endif

#endif
