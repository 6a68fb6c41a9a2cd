T=/opt/torch/.venv/lib/python3.12/site-packages/triton
mkdir -p $OUT/tri; cp $T/knobs.py $OUT/tri/knobs.py; cp $T/compiler/compiler.py $OUT/tri/ccompiler.py; cp $T/runtime/errors.py $OUT/tri/
ls $T/backends/nvidia/bin > $OUT/tri/bins.txt 2>&1
/opt/torch/.venv/bin/python3 .probe/probe.py > $OUT/probe.txt 2>&1; echo rc $? >> $OUT/probe.txt
tail -5 $OUT/probe.txt
