from setuptools import find_packages, setup

setup(
    name="ektelo_pgm",
    version="0.1.0",
    description="Differentially private query answering and synthetic data with implicit "
    "query operators and graphical-model reconstruction",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["ektelo_pgm", "ektelo_pgm.*"]),
    package_data={"ektelo_pgm.sample_data": ["*.csv.xz", "*-domain.json", "README.md", "raw/*"]},
    python_requires=">=3.11",
    install_requires=["numpy>=1.24", "scipy>=1.12", "networkx>=3.0", "numba>=0.58", "pandas>=2.0", "tqdm>=4.60",
                      "threadpoolctl>=3"],
    extras_require={
        "sparse": ["scikit-sparse==0.4.16"],
        "gem": ["torch>=2.0"],
        "gpu": ["torch>=2.0", "triton>=3.0"],
        "dask": ["dask[dataframe]>=2024.1", "pyarrow>=14"],
        "report": ["matplotlib>=3.5"],
        "parquet": ["pyarrow>=14"],
        "ml": ["scikit-learn>=1.3"],
        "test": ["pytest>=8.2", "hypothesis>=6", "mpmath>=1.3", "pytest-xdist>=3", "setuptools>=61"],
    },
    entry_points={"console_scripts": ["ektelo-pgm=ektelo_pgm.cli:main"]},
)
