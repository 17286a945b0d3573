#pragma once
// Force-included (-include) into every daemon translation unit by the
// hostkeeper_daemon_async target. Boost 1.74's <boost/asio/awaitable.hpp>
// calls std::exchange without including <utility>: whichever Asio header comes
// first must find it already declared. The coroutine rules the daemon follows
// for g++ 12 ("named first", GCC bug 109224) are in docs/DEVELOPMENT.md,
// "Toolchain workarounds".
#include <utility>
