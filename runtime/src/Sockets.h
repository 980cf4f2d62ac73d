//===- Sockets.h - Whole messages over TCP ----------------------*- C++ -*-===//
//
// The rendezvous (Launch.cpp) and the watch (Watch.cpp) send and receive
// whole messages over blocking sockets.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_SOCKETS_H
#define DSRUN_SOCKETS_H

#include <cerrno>
#include <cstddef>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <string>
#include <sys/types.h>
#include <unistd.h>

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

/// A connection to A within LimitMs, or -1: non-blocking, so that an
/// address that never answers costs the caller's limit, not the kernel's
/// minutes of SYN retries.
inline int connectWithin(const addrinfo *A, int LimitMs) {
  int S = socket(A->ai_family, A->ai_socktype, 0);
  if (S < 0)
    return -1;
  int Flags = fcntl(S, F_GETFL, 0);
  fcntl(S, F_SETFL, Flags | O_NONBLOCK);
  int Status = ::connect(S, A->ai_addr, A->ai_addrlen);
  if (Status != 0 && errno == EINPROGRESS) {
    pollfd Poll{S, POLLOUT, 0};
    int Error = 0;
    socklen_t Size = sizeof(Error);
    Status = poll(&Poll, 1, LimitMs) == 1 &&
                     getsockopt(S, SOL_SOCKET, SO_ERROR, &Error, &Size) == 0 &&
                     Error == 0
                 ? 0
                 : -1;
  }
  if (Status != 0) {
    close(S);
    return -1;
  }
  fcntl(S, F_SETFL, Flags);
  return S;
}

/// Why connectTo found no connection: Host does not resolve (retrying
/// will not help), or nothing accepted.
constexpr int Unresolved = -2, Unanswered = -1;

/// A connection to Host:Port within LimitMs, each address it resolves to
/// tried in turn, with TCP_NODELAY (the messages are small and answered);
/// else Unresolved or Unanswered, with Why set.
inline int connectTo(const std::string &Host, int Port, int LimitMs,
                     std::string &Why) {
  addrinfo Hints{}, *Address = nullptr;
  Hints.ai_family = AF_UNSPEC;
  Hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(Host.c_str(), std::to_string(Port).c_str(), &Hints,
                  &Address) != 0) {
    Why = "cannot resolve " + Host;
    return Unresolved;
  }
  int Fd = -1;
  for (const addrinfo *A = Address; A && Fd < 0; A = A->ai_next)
    Fd = connectWithin(A, LimitMs);
  freeaddrinfo(Address);
  if (Fd < 0) {
    Why = "nothing accepted the connection";
    return Unanswered;
  }
  int One = 1;
  setsockopt(Fd, IPPROTO_TCP, TCP_NODELAY, &One, sizeof(One));
  return Fd;
}

} // namespace dsrun

#endif
