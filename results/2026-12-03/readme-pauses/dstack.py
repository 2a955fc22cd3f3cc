# Samples every thread of a process every 20 ms; for threads in D state
# counts the first interesting kernel frame of their stack.
import os, sys, time, collections
pid=int(sys.argv[1]); dur=float(sys.argv[2])
cnt=collections.Counter(); names=collections.Counter(); n=0
end=time.time()+dur
while time.time()<end:
    try: tids=os.listdir(f'/proc/{pid}/task')
    except FileNotFoundError: break
    for t in tids:
        try:
            st=open(f'/proc/{pid}/task/{t}/stat').read()
            state=st.rsplit(')',1)[1].split()[0]
            if state!='D': continue
            comm=st.split('(',1)[1].rsplit(')',1)[0]
            stack=[l.split(']',1)[1].strip().split('+')[0] for l in open(f'/proc/{pid}/task/{t}/stack') if ']' in l]
            key=comm[:16]+": "+" < ".join(stack[:5])
            cnt[key]+=1; names[comm]+=1
        except Exception: pass
    n+=1; time.sleep(0.02)
print("samples",n)
for k,v in cnt.most_common(12): print(v,k)
print(names.most_common(10))
