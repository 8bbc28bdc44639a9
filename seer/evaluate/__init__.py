"""Every evaluation of seer, one module per `python -m seer.evaluate --set`: Test-set-I
(set_one), Test-set-II (selection), noise, analytical, transfer, models and traces; what they
share (report, metrics, plots) and the speed benchmarks (bench).

One unit per quantity in everything the evaluations write (--out .json or .csv), and in the
API: times are in ms and named `*_ms`; errors, shares and rates are fractions (0.1 = 10%):
ape, rmspe, mape, median_ape, p90_ape, gmae, within_10pct and within_5pct (the share of rows
within 10% or 5%), top1, slowdown_*, *_share, *_error, *_dev, error, vs_oracle, attributed,
and total_time_ratio (a plain ratio, 1 = the fastest). Percents appear only in printed text
and on plots. The one exception: the memory-bound fit's parameters, copied from the fits file,
carry their unit in their name (latency_us, row_ns, *_gbs).
"""
