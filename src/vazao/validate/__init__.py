"""Predictions checked against measurements: `vazao validate FILE.csv`.

    from vazao.validate import read_rows, predict_rows, validation_report
    rows, problems = read_rows("published-measurements.csv")
    report = validation_report(predict_rows(rows), problems)
"""

from vazao.validate.rows import MeasuredRow, Problem, parse_rows, read_rows
from vazao.validate.run import RowResult, ValidationReport, predict_rows, validation_report

__all__ = ["MeasuredRow", "Problem", "RowResult", "ValidationReport", "parse_rows", "predict_rows", "read_rows",
           "validation_report"]
