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

# Fed-CAM (Ma et al., ../shared/papers/cam-fedcam.txt), Tables 1-2: test accuracy and macro-F1 (%)
# on client-wise test sets, mean over seeds (the paper's ± std left out). Key: (K, method);
# FedAvg/FedProx are single models (K = 1). Ensembles report no std in the paper.
_CAM_METHODS = ["fedavg", "fedprox", "fedavg_plus", "fedprox_plus", "ifca", "ifca_cam", "fesem", "fesem_cam"]


def _cam(rows):
    """rows: {K: [(acc, f1) per method of that K block]} -> {(K, method): (acc, f1)}."""
    out = {}
    for K, values in rows.items():
        methods = _CAM_METHODS[:2] if K == 1 else _CAM_METHODS[2:]
        out.update({(K, m): v for m, v in zip(methods, values)})
    return out


FEDCAM_TABLES = {
    ("cam_table1", "fashion_mnist", "cluster_dirichlet"): _cam({
        1: [(86.08, 57.24), (86.32, 58.03)],
        5: [(87.61, 59.48), (87.94, 59.83), (84.60, 62.03), (93.33, 79.64), (94.64, 82.90), (95.13, 85.10)],
        10: [(89.42, 67.83), (89.55, 68.02), (82.10, 62.62), (95.42, 88.45), (95.73, 89.34), (96.19, 92.37)]}),
    ("cam_table1", "fashion_mnist", "cluster_nclass"): _cam({
        1: [(86.33, 46.09), (86.42, 45.86)],
        5: [(86.95, 65.61), (86.52, 65.73), (84.94, 66.50), (95.38, 77.56), (94.20, 77.07), (95.69, 78.82)],
        10: [(86.91, 63.01), (86.73, 63.42), (86.58, 66.22), (95.09, 82.98), (95.54, 84.43), (98.07, 92.43)]}),
    ("cam_table1", "cifar10", "cluster_dirichlet"): _cam({
        1: [(24.38, 11.69), (24.73, 11.28)],
        5: [(25.97, 12.16), (26.05, 12.53), (34.10, 22.12), (58.13, 28.09), (59.06, 32.33), (64.35, 38.33)],
        10: [(28.45, 13.79), (28.33, 13.64), (34.84, 22.76), (70.90, 40.03), (66.89, 38.35), (78.45, 49.50)]}),
    ("cam_table1", "cifar10", "cluster_nclass"): _cam({
        1: [(21.33, 9.00), (22.66, 9.23)],
        5: [(24.35, 9.06), (24.83, 9.31), (29.80, 17.90), (54.56, 27.27), (58.76, 35.75), (65.58, 38.63)],
        10: [(27.28, 9.81), (26.94, 9.64), (34.06, 18.70), (68.46, 41.45), (71.76, 49.72), (75.04, 55.90)]}),
    ("cam_table2", "fashion_mnist", "dirichlet"): _cam({
        1: [(85.90, 54.52), (86.03, 54.69)],
        5: [(86.12, 61.07), (86.39, 56.56), (90.13, 68.47), (93.72, 70.67), (91.51, 73.78), (94.74, 75.12)],
        10: [(86.81, 60.43), (86.24, 56.2), (91.04, 68.6), (95.70, 79.17), (93.3, 80.47), (95.25, 81.5)]}),
    ("cam_table2", "fashion_mnist", "nclass"): _cam({
        1: [(86.17, 44.88), (86.47, 44.89)],
        5: [(86.5, 45.39), (86.15, 45.43), (91.54, 72.30), (92.24, 70.24), (91.83, 71.05), (93.14, 76.98)],
        10: [(86.91, 47.12), (86.78, 42.83), (91.42, 72.29), (92.57, 76.31), (93.75, 79.39), (95.15, 86.16)]}),
    ("cam_table2", "cifar10", "dirichlet"): _cam({
        1: [(25.62, 11.38), (25.72, 11.14)],
        5: [(25.71, 12.45), (25.58, 12.43), (47.21, 22.67), (54.32, 23.48), (54.30, 24.78), (59.71, 40.45)],
        10: [(27.83, 13.65), (25.86, 12.84), (47.62, 23.36), (72.54, 42.86), (67.0, 31.69), (80.11, 59.19)]}),
    ("cam_table2", "cifar10", "nclass"): _cam({
        1: [(24.30, 8.56), (24.19, 8.69)],
        5: [(24.83, 8.74), (25.88, 8.55), (46.54, 17.78), (54.92, 25.20), (55.55, 32.80), (56.70, 34.52)],
        10: [(27.71, 9.65), (26.16, 9.94), (47.96, 17.88), (61.01, 31.63), (63.64, 42.97), (69.88, 49.5)]}),
}
