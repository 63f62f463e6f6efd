// A CSV file (CsvDataset, the data-table nodes). Input: one byte of
// options (header row or not; classification or regression; the target
// the last column or the first), then the file. read_csv_table and load_csv
// may refuse it only with std::runtime_error naming the file. What they read
// must agree: load_csv's rows are read_csv_table's data rows.
#include "fuzz/fuzz_targets.h"
#include "train/data.h"

#include <torch/torch.h>

#include <stdexcept>

namespace codefy::fuzz {

void csv(std::string_view data) {
  if (data.empty()) return;
  const auto flags = static_cast<unsigned char>(data[0]);
  data.remove_prefix(1);
  const std::string& path = file_with(data);

  std::optional<train::CsvTable> table;
  try {
    table = train::read_csv_table(path, (flags & 1) != 0);
    for (const auto& row : table->rows) check(row.size() == table->header.size(), "a ragged row was accepted");
    for (const auto& row : table->rows)
      for (const auto& cell : row) (void)train::parse_number(cell);
  } catch (const std::runtime_error&) {
  }

  train::CsvOptions options;
  options.classification = (flags & 2) != 0;
  if ((flags & 4) && table && !table->header.empty()) options.target_column = table->header.front();
  try {
    const train::Dataset ds = train::load_csv(path, options);
    check(ds.inputs.dim() == 2 && ds.inputs.size(0) == ds.targets.size(0),
          "load_csv: inputs and targets differ in rows");
    // load_csv reads a header row: its data rows are those of the table read with one.
    if (table && (flags & 1))
      check(ds.inputs.size(0) == static_cast<int64_t>(table->rows.size()),
            "load_csv and read_csv_table read different numbers of rows");
  } catch (const std::runtime_error&) {
  }
}

}  // namespace codefy::fuzz
