#!/usr/bin/env python3
"""Checks bench/transformer_layer's table (--top 0) against its own rows: every product's row
has an estimate beside its cycles, and the bound line adds the products' bound to the other
operations' measured cycles (its parts summed again here from the rows)."""
import re
import sys

text = open(sys.argv[1]).read()
rows = re.findall(r"^(layer\.\S+) +(\d+) +[0-9.]+%(.*)$", text, re.M)
assert rows, "no operation rows"
products = others = 0
for label, cycles, rest in rows:
    fields = rest.split()
    if fields and re.fullmatch(r"(\d+x)?\d+x\d+x\d+(/\d+)?", fields[-1]):
        assert len(fields) == 4, f"{label}: expected TFLOP/s, % peak, est/sim and split: {rest}"
        assert 0.5 < float(fields[2]) < 2.0, f"{label}: est/sim {fields[2]}"
        products += int(cycles)
    else:
        assert not fields, f"{label}: a row without a split has no figures: {rest}"
        others += int(cycles)
layer = int(re.search(r"^layer +(\d+) cycles", text, re.M).group(1))
assert layer == products + others, (layer, products, others)
m = re.search(r"^bound +(\d+) cycles: .* the products at their bound \((\d+) cycles, ([0-9.]+)% "
              r"of what they took\)", text, re.M)
assert m, "no bound line"
bound, product_bound, share = int(m.group(1)), int(m.group(2)), float(m.group(3))
assert abs(bound - (product_bound + others)) <= 1, (bound, product_bound, others)
assert 0 < product_bound < products, (product_bound, products)
assert abs(share - 100.0 * product_bound / products) < 0.1, (share, product_bound, products)
print(f"ok: {len(rows)} operations, products {products} cycles (bound {product_bound}), "
      f"others {others}, bound {bound}")
