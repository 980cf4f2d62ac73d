//===- Graph.cpp ----------------------------------------------------------===//

#include "Graph.h"

#include <cstdio>
#include <cstdlib>

using namespace llvm;

namespace dsc::viz {

std::string html(StringRef Text) {
  std::string Out;
  for (char C : Text) {
    switch (C) {
    case '&':
      Out += "&amp;";
      break;
    case '<':
      Out += "&lt;";
      break;
    case '>':
      Out += "&gt;";
      break;
    case '"':
      Out += "&quot;";
      break;
    default:
      Out += C;
    }
  }
  return Out;
}

static char *str(const std::string &S) { return const_cast<char *>(S.c_str()); }

Graph::Graph(StringRef Name) {
  G = agopen(str(Name.str()), Agdirected, nullptr);
}

Graph::~Graph() { agclose(G); }

Agraph_t *Graph::cluster(Agraph_t *Parent, StringRef Name, StringRef Label) {
  std::string Full = "cluster_" + Name.str();
  Agraph_t *S = agsubg(Parent, str(Full), 1);
  set(S, "label", Label);
  return S;
}

Agnode_t *Graph::node(Agraph_t *In, StringRef Name) {
  return agnode(In, str(Name.str()), 1);
}

Agedge_t *Graph::edge(Agnode_t *From, Agnode_t *To) {
  return agedge(G, From, To, nullptr, 1);
}

void Graph::setAttr(void *Obj, int Kind, StringRef Attr, StringRef Value,
                    bool Html) {
  std::string A = Attr.str(), V = Value.str();
  Agsym_t *Sym = agattr(G, Kind, str(A), nullptr);
  if (!Sym)
    Sym = agattr(G, Kind, str(A), str(std::string()));
  if (!Html) {
    agxset(Obj, Sym, str(V));
    return;
  }
  char *H = agstrdup_html(G, str(V));
  agxset(Obj, Sym, H);
  agstrfree(G, H);
}

void Graph::set(Agraph_t *Obj, StringRef Attr, StringRef Value) {
  setAttr(Obj, AGRAPH, Attr, Value, false);
}
void Graph::set(Agnode_t *Obj, StringRef Attr, StringRef Value) {
  setAttr(Obj, AGNODE, Attr, Value, false);
}
void Graph::set(Agedge_t *Obj, StringRef Attr, StringRef Value) {
  setAttr(Obj, AGEDGE, Attr, Value, false);
}
void Graph::setHtmlLabel(Agnode_t *N, StringRef Html) {
  setAttr(N, AGNODE, "label", Html, true);
}
void Graph::setHtmlLabel(Agraph_t *Sub, StringRef Html) {
  setAttr(Sub, AGRAPH, "label", Html, true);
}

std::string Graph::dot() const {
  char *Buffer = nullptr;
  size_t Size = 0;
  FILE *F = open_memstream(&Buffer, &Size);
  agwrite(G, F);
  fclose(F);
  std::string Out(Buffer, Size);
  free(Buffer);
  return Out;
}

} // namespace dsc::viz
