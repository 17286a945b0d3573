#pragma once
// The toolchain workarounds of the daemon's coroutine code, and why, in one
// place. Debian 12 builds with g++ 12.2 and Boost 1.74; each rule below can go
// when both are newer. This header is force-included (-include) into every
// daemon translation unit by the hostkeeper_daemon_async target, so no source
// needs to order its includes around it.
//
// 1. Boost 1.74's <boost/asio/awaitable.hpp> calls std::exchange without
//    including <utility>: whichever Asio header comes first must find it
//    already declared. Hence the include below.
//
// 2. g++ 12 may destroy a temporary that has a destructor twice when the
//    temporary lives inside a co_await expression, and it destroys the
//    captures of a lambda that is itself a coroutine twice.
//    So, throughout daemon/:
//      - a value awaited is first named, then awaited: `auto op = f(x);
//        co_await std::move(op);`, never `co_await f(std::string(...))`;
//      - arguments built for an awaited call are named locals, not
//        temporaries;
//      - lambdas that run on a coroutine are plain functions or handlers
//        (see async/on_worker.hpp), never lambda coroutines with captures.
//    Comments in the code say "named first (async/toolchain.hpp)" where it
//    matters.
//
// 3. GCC bug 109224: g++ 12 warns falsely (-Wmismatched-new-delete) about a
//    coroutine that makes a lambda, or that awaits after a try block: such
//    lambdas are made in plain functions (registry/registry_service.cpp's
//    jobs, discovery's settle()), such awaits moved into a coroutine of their
//    own. The registry cache's request handlers (daemon/registry_cache/) trip
//    it on every coroutine that awaits in more than one branch of a switch;
//    that target alone turns the warning off. Under -fsanitize=address it also warns on Asio's coroutine frames:
//    the top-level CMakeLists.txt turns the warning off there only.
#include <utility>
