"""Predictions checked against measurements: `vazao validate FILE.csv`.

    from vazao.validate import read_rows, predict_rows, summarize
    rows, problems = read_rows("published-measurements.csv")
    report = summarize(predict_rows(rows), problems)
"""

from vazao.validate.rows import MeasuredRow, Problem, parse_rows, read_rows
from vazao.validate.run import RowResult, ValidationReport, predict_rows, summarize

__all__ = ["MeasuredRow", "Problem", "RowResult", "ValidationReport", "parse_rows", "predict_rows", "read_rows",
           "summarize"]
