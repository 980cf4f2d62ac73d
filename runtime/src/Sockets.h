//===- Sockets.h - Whole messages over TCP ----------------------*- C++ -*-===//
//
// The rendezvous (Launch.cpp) and the watch (Watch.cpp) send and receive
// whole messages over blocking sockets.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_SOCKETS_H
#define DSRUN_SOCKETS_H

#include <cstddef>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

namespace dsrun {

/// Size bytes, all of them, or false (without SIGPIPE on a closed peer).
inline bool sendAll(int Fd, const void *Data, size_t Size) {
  const char *P = static_cast<const char *>(Data);
  while (Size) {
    ssize_t N = send(Fd, P, Size, MSG_NOSIGNAL);
    if (N <= 0)
      return false;
    P += N;
    Size -= size_t(N);
  }
  return true;
}

/// Size bytes, each piece within TimeoutMs of the last, or false.
inline bool receiveAll(int Fd, void *Data, size_t Size, int TimeoutMs) {
  char *P = static_cast<char *>(Data);
  while (Size) {
    pollfd Poll{Fd, POLLIN, 0};
    if (poll(&Poll, 1, TimeoutMs) <= 0)
      return false;
    ssize_t N = recv(Fd, P, Size, 0);
    if (N <= 0)
      return false;
    P += N;
    Size -= size_t(N);
  }
  return true;
}

} // namespace dsrun

#endif
