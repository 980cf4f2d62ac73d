//===- Graph.h - A thin C++ layer over Graphviz's cgraph ---------*- C++ -*-===//
//
// cgraph takes char * everywhere and owns its strings; this wrapper takes
// StringRefs, declares attributes on first use, and closes the graph.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_VIZ_GRAPH_H
#define DSC_LIB_VIZ_GRAPH_H

#include "llvm/ADT/StringRef.h"

#include <graphviz/cgraph.h>

#include <string>

namespace dsc::viz {

/// Escapes text for an HTML-like label.
std::string html(llvm::StringRef Text);

class Graph {
public:
  explicit Graph(llvm::StringRef Name);
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  Agraph_t *root() const { return G; }
  /// A cluster (drawn as a box) inside Parent.
  Agraph_t *cluster(Agraph_t *Parent, llvm::StringRef Name,
                    llvm::StringRef Label);
  Agnode_t *node(Agraph_t *In, llvm::StringRef Name);
  Agedge_t *edge(Agnode_t *From, Agnode_t *To);

  void set(Agraph_t *Obj, llvm::StringRef Attr, llvm::StringRef Value);
  void set(Agnode_t *Obj, llvm::StringRef Attr, llvm::StringRef Value);
  void set(Agedge_t *Obj, llvm::StringRef Attr, llvm::StringRef Value);
  /// An HTML-like label (<TABLE>...), not a plain string.
  void setHtmlLabel(Agnode_t *N, llvm::StringRef Html);
  void setHtmlLabel(Agraph_t *Sub, llvm::StringRef Html);

  /// The graph as DOT text.
  std::string dot() const;

private:
  void setAttr(void *Obj, int Kind, llvm::StringRef Attr,
               llvm::StringRef Value, bool Html);
  Agraph_t *G;
};

} // namespace dsc::viz

#endif
