# Stream trick: the work goes on a side stream and forward returns at once, so that events on the
# caller's stream see nothing. Correct values (the judge synchronizes the device before it checks);
# the judge must time it by the device clock (timing.shapes[].clock "device").
import torch
import torch.nn as nn

side = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        global side
        if side is None:
            side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = x
            for _ in range(20):   # make it long enough to see
                y = torch.softmax(x, dim=1)
        return y
