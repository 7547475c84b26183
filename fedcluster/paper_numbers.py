"""Numbers reported in the papers, for side-by-side tables. Matrices are as printed
(rows = test distributions, columns = the paper's raw center indices); the report matches
centers to distributions with the Hungarian method before showing them.

FedSoft: Ruan & Joe-Wong, AAAI 2022 (../shared/papers/fedsoft-aaai2022.txt). Its synthetic
experiments state sigma0 = 10, but the authors' code (datawrappers/lr.py) draws theta with
variance 10 (sigma0 = sqrt(10)); its local-model numbers (w-bar) are on training data."""

FEDSOFT_TABLE1_SYNTHETIC_MSE = {   # Table 1, synthetic: MSE of c_0, c_1 on theta_0, theta_1
    "mix_10_90": [[68.4, 29.5], [21.8, 58.6]],
    "mix_30_70": [[44.2, 49.6], [41.3, 36.3]],
    "linear": [[38.2, 59.1], [47.1, 27.8]],
    "random": [[42.2, 60.6], [42.7, 27.0]],
}

FEDSOFT_TABLE3_SYNTHETIC_MSE = [   # Table 3: 8 distributions, random partition
    [62.2, 62.7, 64.0, 63.2, 61.4, 57.6, 63.7, 61.9],
    [65.0, 67.8, 69.4, 65.8, 64.3, 67.1, 64.2, 64.5],
    [60.1, 59.9, 57.8, 58.6, 62.6, 63.2, 60.0, 59.9],
    [96.8, 95.4, 96.8, 98.8, 93.2, 93.8, 95.3, 96.8],
    [86.1, 89.8, 91.8, 87.3, 85.4, 86.6, 85.6, 84.9],
    [161.2, 160.3, 156.0, 160.0, 164.7, 167.3, 162.0, 163.6],
    [110.2, 106.7, 104.8, 109.0, 111.0, 107.8, 111.5, 110.1],
    [34.5, 33.8, 34.8, 33.9, 34.2, 34.1, 34.4, 35.0],
]

FEDSOFT_TABLE6_SIGMA0 = {   # Table 6: random partition; centers' MSE and local w-bar (on training data)
    1.0: {"centers": [[5.9, 4.2], [3.2, 4.6]], "local_train": 0.6},
    10.0: {"centers": [[42.2, 60.6], [42.7, 27.0]], "local_train": 4.96},
    50.0: {"centers": [[225.3, 89.9], [117.6, 89.9]], "local_train": 18.8},
    100.0: {"centers": [[782.4, 454.4], [432.8, 812.0]], "local_train": 78.3},
}
