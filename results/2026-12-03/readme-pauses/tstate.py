# Samples the commit log's threads every 5 ms: state and kernel wait channel / top stack frame.
import os, sys, time, collections
pid=int(sys.argv[1]); dur=float(sys.argv[2])
cnt=collections.Counter(); n=0
end=time.time()+dur
while time.time()<end:
    try: tids=os.listdir(f'/proc/{pid}/task')
    except FileNotFoundError: break
    for t in tids:
        try:
            st=open(f'/proc/{pid}/task/{t}/stat').read()
            comm=st.split('(',1)[1].rsplit(')',1)[0]
            if not comm.startswith('commitlog'): continue
            state=st.rsplit(')',1)[1].split()[0]
            stack=[l.split(']',1)[1].strip().split('+')[0] for l in open(f'/proc/{pid}/task/{t}/stack') if ']' in l]
            top=' < '.join(x for x in stack[:4])
            cnt[(comm,state,top)]+=1
        except Exception: pass
    n+=1; time.sleep(0.005)
print("samples",n)
for k,v in cnt.most_common(25): print(v,k[0],k[1],k[2][:170])
