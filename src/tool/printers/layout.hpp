// A result as people read it: headings, lines of text, key-value fields,
// nested items and tables. Each result kind lays its document out once
// (views.hpp); the table printer renders the layout for a terminal, the
// markdown printer for a report, so the phrasing exists once per kind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lrrt/bundle/text.hpp"

namespace lrrt::tool::printers {

enum class Align { Left, Right };

// Columns, and rows of cells already phrased ("4.14 us", "0.97x").
struct Table {
  std::vector<std::string> columns;
  std::vector<Align> align;  // per column; missing ones are left-aligned
  std::vector<std::vector<std::string>> rows;
  Align column_align(size_t i) const { return i < align.size() ? align[i] : Align::Left; }
};

struct Block {
  enum class Kind { Heading, Text, Fields, Items, Table };
  Kind kind = Kind::Text;
  int depth = 0;        // Heading: 0 section, 1 subsection; others: nesting (terminal indent)
  bool folded = false;  // Heading: a section readers open when they want it (markdown <details>)
  bool strong = false;  // Text: the line that matters (a verdict)
  std::string text;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::string> items;
  Table table;
};

class Layout {
 public:
  Layout& heading(std::string text, int depth = 0, bool folded = false) {
    Block b{Block::Kind::Heading};
    b.text = std::move(text);
    b.depth = depth;
    b.folded = folded;
    return add(std::move(b));
  }
  Layout& text(std::string line, bool strong = false, int depth = 0) {
    Block b{Block::Kind::Text};
    b.text = std::move(line);
    b.strong = strong;
    b.depth = depth;
    return add(std::move(b));
  }
  Layout& fields(std::vector<std::pair<std::string, std::string>> kv, int depth = 0) {
    Block b{Block::Kind::Fields};
    b.fields = std::move(kv);
    b.depth = depth;
    return add(std::move(b));
  }
  Layout& items(std::vector<std::string> lines, int depth = 0) {
    Block b{Block::Kind::Items};
    b.items = std::move(lines);
    b.depth = depth;
    return add(std::move(b));
  }
  Layout& table(Table t, int depth = 0) {
    Block b{Block::Kind::Table};
    b.table = std::move(t);
    b.depth = depth;
    return add(std::move(b));
  }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  // Every string of a layout may quote an input (a manifest's name, a
  // kernel's, a file's): escaped here, once for every printer.
  Layout& add(Block b) {
    auto safe = [](std::string& s) { s = bundle::terminal_safe(s); };
    safe(b.text);
    for (auto& [k, v] : b.fields) safe(k), safe(v);
    for (auto& item : b.items) safe(item);
    for (auto& c : b.table.columns) safe(c);
    for (auto& row : b.table.rows)
      for (auto& cell : row) safe(cell);
    blocks_.push_back(std::move(b));
    return *this;
  }
  std::vector<Block> blocks_;
};

}  // namespace lrrt::tool::printers
