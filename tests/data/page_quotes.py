"""What the ELI12 pages print, script by script: a copy of the lines and values the
pages quote, kept as test data (source: week1_eli12.txt and week2_eli12.txt).

LINES: exact lines the pages quote from a script's run (code blocks, verbatim).
TOKENS: values the pages quote inside rendered tables or prose; each must appear
in the script's stdout as a whole value. A quoted rounding-noise value (such as
0.00000011, "matched the formula to 0.00000011") is judged like a noise line: the script
must print a `max |A - B|=` line, and both values must be at most the check's ceiling.
"""
LINES = {
    "week1/01_attention_from_scratch.py": [
        "attention shape=(1, 2, 3, 4); row-sum range=1.000000..1.000000",
        "max |NumPy - torch SDPA|=0.00000011",
    ],
    "week1/02_dot_product_variance.py": [
        "d_k=  4 Var(q.k)=    4.04 target=  4 scaled_var=1.011",
        "d_k= 16 Var(q.k)=   15.87 target= 16 scaled_var=0.992",
        "d_k= 64 Var(q.k)=   63.83 target= 64 scaled_var=0.997",
        "d_k=256 Var(q.k)=  253.99 target=256 scaled_var=0.992",
    ],
    "week1/03_multihead_shape_check.py": [
        "input [B,T,d_model]=[2,5,16]",
        "heads [B,h,T,d_k]=[2,4,5,4]; concat=[2, 5, 16]",
        "max |manual - torch.nn.MultiheadAttention|=0.00000009",
    ],
    "week1/04_encoder_parameter_count.py": [
        "MHA formula=1,050,624; FFN formula=2,099,712; two LayerNorms=2,048",
        "encoder-layer formula=3,152,384; torch count=3,152,384; equal=True",
        "Course shorthand: about 3.15M with FFN biases; original paper's base layer count is approximate.",
    ],
    "week1/05_additive_attention.py": [
        "alignment scores=[ 0.699  0.539 -0.081 -0.522]",
        "alpha=[0.384 0.327 0.176 0.113]; sum=1.000000",
        "context=[ 0.351 -0.993 -0.053]",
    ],
    "week2/07_decoder_parameter_count.py": [
        "decoder layer formula=4,204,032; torch count=4,204,032; equal=True",
    ],
}

TOKENS = {
    # The worked examples' page values, as those scripts write them beside each computed value
    # (the page's LaTeX in plain numbers where it differs: \tfrac12 as 0.5, -\infty as -inf).
    "week1/06_worked_examples.py": [
        "thesame", "[0.881,0.119]", "1.93", "[0.707,0]", "[0.670,0.330]", "[0.330,0.670]", "[0.5,0.5]",
        "[0.5,1]", "[0.9997,0.0003]", "[1,0]", "[0.731,0.269]", "[1.0,0.9]", "1.00", "64", "512", "[512,512]",
        "[1,2,3,4]", "[4,6]", "[T,512]", "589,824", "[50,512]", "6400", "1,048,576", "2,048", "1,050,624",
        "2,097,152", "2,560", "2,099,712", "3,152,384", "3.15M", "18,914,304", "2", "32,768", "1,152", "4",
        "[1.011,0.992,0.997,0.992]",
    ],
    "week2/09_worked_examples.py": [
        "[0,1,2,3]", "[1,2,3,4]", "[0,1,7,6]", "B", "6", "0", "[2,1,-inf,-inf]", "[0.7311,0.2689,0,0]",
        "[3,5]", "18,944,000", "18,981,000", "160", "76", "24", "260", "2,101,248", "2,099,712", "3,072",
        "4,204,032", "25,224,192", "4.204M", "[1,0.01]", "[0,1,0,1]", "[0.8415,0.5403,0.0100,1.0000]", "[2,2]",
        "True", "2", "2/3", "[-1.2247,0,1.2247]", "[-1.2247,0.0000,1.2247]", "[2,1]", "[-1,-1]", "[1,1]",
        "[-1,1]", "Expectedmorethan1valueperchannelwhentraining", "[0.02,0.02,0.92,0.02,0.02]", "1",
        "[0.025,0.025,0.925,0.025]", "0.9", "0.0000001747", "0.0000002471", "0.0001746928", "0.0002470529",
        "0.0006987712", "0.0009882118", "0.0004941059", "4000", "1/sqrt(2)", "[BOS,A,B]", "10", "[3,6]",
        "True,False",
    ],
    # Check yourself: every answer the page prints, computed by the page's own question kinds at the page's
    # numbers (the ELI5 page's grid [3 × 4] as week1/07 prints it, [3 x 4]; the page's (a, b) as a, b).
    "week1/18_check_yourself.py": [
        "thesamesize", "[0.881,0.119]", "1.93", "[0.707,0]", "[0.670,0.330]", "[0.330,0.670]", "[0.5,0.5]",
        "[0.5,1]", "[0.9997,0.0003]", "[1,0]", "[0.731,0.269]", "[1.0,0.9]", "1.00", "512", "[512,512]", "[T,512]",
        "[1,2,3,4]", "[4,6]", "[1,4]", "[1,2]", "589,824", "[50,512]", "6400", "1,048,576", "2,048", "1,050,624",
        "2,097,152", "2,560", "2,099,712", "3,152,384", "3.15M", "18,914,304", "32,768", "1,152", "[3x4]",
    ],
    "week2/21_check_yourself.py": [
        "[0,1,2,3]", "[1,2,3,4]", "[BOS,A,B]", "B", "6", "10", "1+2+3", "[2,1,-inf,-inf]", "[0.7311,0.2689,0,0]",
        "[2,4,3,5]", "[3,5]", "[3,6]", "[2,3,16]", "18,944,000", "18,981,000", "160", "76", "24", "260",
        "2,101,248", "2,099,712", "3,072", "4,204,032", "25,224,192", "4.204M", "0.01", "[0,1,0,1]",
        "[0.8415,0.5403,0.0100,1.0000]", "2", "2/3", "-1.2247,0,1.2247", "[-1,-1]", "[1,1]", "[-1,1]",
        "[0.02,0.02,0.92,0.02,0.02]", "[0.025,0.025,0.925,0.025]", "0.9", "0.0000001747", "0.0000002471",
        "0.0001746928", "0.0002470529", "0.0006987712", "0.0009882118", "0.0004941059",
    ],
    "week2/01_causal_mask.py": [
        "[0,1,1,1]", "[0,0,1,1]", "[0,0,0,1]", "[0,0,0,0]",
        "0.3100", "0.6900", "0.0",
    ],
    "week2/02_cross_attention_shapes.py": [
        "[2,5,3,16,4]", "[2,3,16]", "[2,5,16]", "[2,4,3,5]",
    ],
    "week2/03_sinusoidal_pe.py": ["0.00000011", "[0.8415,0.5403,0.0100,1.0000]"],
    "week2/04_norm_axes.py": ["-1.2247", "0.0000", "1.2247"],
    "week2/05_label_smoothing.py": [
        "[0.02,0.02,0.92,0.02,0.02]",
        "[0.025,0.025,0.925,0.025]", "0.66827178", "equal=True",
    ],
    "week2/06_warmup_schedule.py": [
        "0.0000001747", "0.0001746928", "0.0006987712", "0.0004941059",
        "0.0000002471", "0.0002470529", "0.0009882118",
    ],
    "week2/07_decoder_parameter_count.py": ["4,204,032", "260"],
    "week2/08_teacher_forcing.py": ["[1,2,3,4]", "[0,1,2,3]", "[0,1,7,6]"],
    # section 5's hand-check row, which beliefs 12 and 13 of the mistakes script show too
    "week2/11_mistakes_shown.py": ["[0.8415,0.5403,0.0100,1.0000]"],
}
